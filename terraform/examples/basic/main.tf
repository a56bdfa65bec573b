# A first deployment of the sandbox-cloudrun module with its defaults: ingress
# from the project's VPC networks and load balancers, one request per instance,
# a 60s request timeout, egress to Google APIs only, Cloud Monitoring on.
# docs/deploy.md walks through it; every setting it tells you to change is a
# variable here (variables.tf), and terraform.tfvars sets them.

locals {
  apis = [
    "compute.googleapis.com",
    "dns.googleapis.com",
    "iam.googleapis.com",
    "logging.googleapis.com",
    "monitoring.googleapis.com",
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

  ingress               = var.ingress
  request_timeout       = var.request_timeout
  max_wall_clock        = var.max_wall_clock
  cpu                   = var.cpu
  memory                = var.memory
  min_instances         = var.min_instances
  max_instances         = var.max_instances
  env                   = var.env
  deletion_protection   = var.deletion_protection
  monitoring_enabled    = var.monitoring_enabled
  notification_channels = var.notification_channels
  alert_5xx_ratio       = var.alert_5xx_ratio
  alert_429_ratio       = var.alert_429_ratio
  alert_p99_latency_ms  = var.alert_p99_latency_ms

  depends_on = [google_project_service.apis]
}
