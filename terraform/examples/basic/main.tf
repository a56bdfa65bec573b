# A first deployment of the sandbox-cloudrun module with its defaults: ingress
# from the project's VPC networks and load balancers, one request per instance,
# a 60s request timeout, egress to Google APIs only. docs/deploy.md walks
# through it.

locals {
  apis = [
    "compute.googleapis.com",
    "dns.googleapis.com",
    "iam.googleapis.com",
    "run.googleapis.com",
    "storage.googleapis.com",
  ]
}

resource "google_project_service" "apis" {
  for_each = toset(local.apis)

  project            = var.project_id
  service            = each.value
  disable_on_destroy = false
}

module "sandbox" {
  source = "../.."

  project_id             = var.project_id
  region                 = var.region
  image                  = var.image
  invoker_members        = var.invoker_members
  script_writers         = var.script_writers
  deployers              = var.deployers
  scripts_bucket_enabled = var.scripts_bucket_enabled

  depends_on = [google_project_service.apis]
}
