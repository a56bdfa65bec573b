resource "google_cloud_run_v2_service" "sandbox" {
  project             = var.project_id
  location            = var.region
  name                = var.name
  description         = "Runs untrusted, model-written JavaScript in QuickJS-on-wasm (sandbox-cloudrun)."
  ingress             = var.ingress
  deletion_protection = var.deletion_protection
  labels              = var.labels

  # Every request needs an ID token of one of invoker_members (service.tf,
  # below). Never turned off: the sandbox is not a public endpoint.
  invoker_iam_disabled = false

  template {
    service_account = google_service_account.runtime.email

    # One request per instance: an evaluation owns its instance, and the hard
    # kill (which may end the process) never takes another request with it.
    max_instance_request_concurrency = 1

    # The platform's request timeout, also passed to the container as
    # REQUEST_TIMEOUT below, so that the process's own deadline and hard kill
    # fire first.
    timeout = var.request_timeout

    # gen2: a full Linux sandbox (the process-kill backstop relies on signals
    # and /proc) and the network stack direct VPC egress uses.
    execution_environment = "EXECUTION_ENVIRONMENT_GEN2"

    scaling {
      min_instance_count = var.min_instances
      max_instance_count = var.max_instances
    }

    # All egress, not only private ranges, leaves through the dedicated network
    # (network.tf), whose firewall allows Google APIs on 443 and denies the rest.
    vpc_access {
      egress = "ALL_TRAFFIC"
      network_interfaces {
        network    = google_compute_network.egress.id
        subnetwork = google_compute_subnetwork.egress.id
      }
    }

    containers {
      image = var.image

      ports {
        name           = "http1"
        container_port = 8080
      }

      resources {
        limits = {
          cpu    = var.cpu
          memory = var.memory
        }
        cpu_idle          = !var.cpu_always_allocated
        startup_cpu_boost = true
      }

      env {
        name  = "STORE_URL"
        value = local.store_url
      }
      env {
        name  = "REQUEST_TIMEOUT"
        value = var.request_timeout
      }
      env {
        name  = "MAX_WALL_CLOCK"
        value = var.max_wall_clock
      }
      env {
        name  = "MAX_CONCURRENT_EVALUATIONS"
        value = "1"
      }
      env {
        name  = "PROCESS_KILL"
        value = "true"
      }
      dynamic "env" {
        for_each = local.env
        content {
          name  = env.key
          value = env.value
        }
      }

      # Ready once the engine is compiled and warm and the store is reachable.
      startup_probe {
        initial_delay_seconds = 0
        period_seconds        = 2
        timeout_seconds       = 2
        failure_threshold     = 30
        http_get {
          path = "/readyz"
        }
      }

      liveness_probe {
        period_seconds    = 15
        timeout_seconds   = 3
        failure_threshold = 3
        http_get {
          path = "/healthz"
        }
      }
    }
  }

  lifecycle {
    # Cloud Build rolls new images with gcloud run deploy --image (and gcloud
    # records itself as the client). Terraform sets the image only when it
    # creates the service, so the two never revert each other.
    ignore_changes = [
      template[0].containers[0].image,
      client,
      client_version,
    ]

    # The service's start-up rules, with the values it will run with: the
    # module's timeout and wall clock, and HARD_KILL_GRACE and
    # DEFAULT_WALL_CLOCK from var.env when it sets them.
    precondition {
      condition     = local.request_timeout_ns > local.max_wall_clock_ns + 2 * local.hard_kill_grace_ns + 1e9
      error_message = "request_timeout (${var.request_timeout}) must exceed max_wall_clock (${var.max_wall_clock}) plus twice HARD_KILL_GRACE (${lookup(var.env, "HARD_KILL_GRACE", "500ms, the service's default")}) plus a second, or the service refuses to start: its own hard kill, and its wait for the answer, must end before the platform's timeout. Raise request_timeout, or lower max_wall_clock or env HARD_KILL_GRACE."
    }

    precondition {
      condition     = local.hard_kill_grace_ns > 0 && local.hard_kill_grace_ns <= 60e9
      error_message = "env HARD_KILL_GRACE (${lookup(var.env, "HARD_KILL_GRACE", "")}) must be more than 0 and at most 1m, or the service refuses to start."
    }

    precondition {
      condition     = local.default_wall_clock_ns > 0 && local.default_wall_clock_ns <= local.max_wall_clock_ns
      error_message = "env DEFAULT_WALL_CLOCK (${lookup(var.env, "DEFAULT_WALL_CLOCK", "")}) must be more than 0 and at most max_wall_clock (${var.max_wall_clock}), or the service refuses to start."
    }

    precondition {
      condition     = var.min_instances <= var.max_instances
      error_message = "min_instances must not exceed max_instances."
    }

    precondition {
      condition     = var.auth_audience == "" || length(local.allowed_callers) > 0
      error_message = "auth_audience turns on the service's own ID-token check, which allows the user: and serviceAccount: emails of invoker_members; there are none."
    }
  }
}

# Who may call the service: invoker_members and nobody else.
resource "google_cloud_run_v2_service_iam_member" "invokers" {
  for_each = toset(var.invoker_members)

  project  = google_cloud_run_v2_service.sandbox.project
  location = google_cloud_run_v2_service.sandbox.location
  name     = google_cloud_run_v2_service.sandbox.name
  role     = "roles/run.invoker"
  member   = each.value
}

# Who may roll images (gcloud run deploy): run.developer on this service, and
# the right to deploy revisions that run as the runtime service account. Neither
# role carries setIamPolicy, so a deployer cannot widen the invoker list.
resource "google_cloud_run_v2_service_iam_member" "deployers" {
  for_each = toset(var.deployers)

  project  = google_cloud_run_v2_service.sandbox.project
  location = google_cloud_run_v2_service.sandbox.location
  name     = google_cloud_run_v2_service.sandbox.name
  role     = "roles/run.developer"
  member   = each.value
}

resource "google_service_account_iam_member" "deployers_act_as_runtime" {
  for_each = toset(var.deployers)

  service_account_id = google_service_account.runtime.name
  role               = "roles/iam.serviceAccountUser"
  member             = each.value
}
