# The opt-in Cloud Run job for bulk runs (var.bulk_job): past what one request
# can hold (its timeout, one instance), `sandbox-cloudrun bulk` runs a script
# over NDJSON inputs in a bucket, each input as POST /v1/evaluations:batch runs
# it, a shard per task (CLOUD_RUN_TASK_INDEX of CLOUD_RUN_TASK_COUNT), and
# writes each shard's results and manifest under the results prefix. It is the
# service in another form, so it runs with what the service runs with: the
# same image, environment, identity, execution environment and network. Its
# only additions are two grants to that identity, each conditioned on one
# prefix of one bucket, and the deployers' grant on the job, with which Cloud
# Build moves it to each image it rolls out. With bulk_job.enabled = false
# (the default) none of this exists.

locals {
  bulk_enabled = var.bulk_job.enabled

  # The object names the grants cover: everything under each prefix of the
  # bulk bucket, as IAM Conditions name a Cloud Storage object.
  bulk_objects = {
    inputs  = "projects/_/buckets/${coalesce(var.bulk_job.bucket, "-")}/objects/${var.bulk_job.inputs_prefix}"
    results = "projects/_/buckets/${coalesce(var.bulk_job.bucket, "-")}/objects/${var.bulk_job.results_prefix}"
  }

  # A list of objects is authorized on the bucket, not on an object, so
  # resource.name alone would refuse it; the objectListPrefix attribute (the
  # prefix the list asks for) allows listing under the same prefix and no
  # other. Variables.tf limits the prefixes to characters that need no
  # escaping in these string literals.
  bulk_conditions = {
    for k, p in { inputs = var.bulk_job.inputs_prefix, results = var.bulk_job.results_prefix } :
    k => "resource.name.startsWith(\"${local.bulk_objects[k]}\") || api.getAttribute(\"storage.googleapis.com/objectListPrefix\", \"\").startsWith(\"${p}\")"
  }
}

resource "google_cloud_run_v2_job" "bulk" {
  count = local.bulk_enabled ? 1 : 0

  project             = var.project_id
  location            = var.region
  name                = "${var.name}-bulk"
  deletion_protection = var.deletion_protection
  labels              = var.labels

  template {
    task_count  = var.bulk_job.task_count
    parallelism = var.bulk_job.parallelism

    template {
      # The service's identity: the scripts bucket to read BULK_SCRIPT from,
      # and the two conditioned grants below.
      service_account = google_service_account.runtime.email
      timeout         = var.bulk_job.task_timeout
      max_retries     = var.bulk_job.max_retries

      # As the service (service.tf): the process-kill backstop relies on
      # signals and /proc, and direct VPC egress on gen2 networking.
      execution_environment = google_cloud_run_v2_service.sandbox.template[0].execution_environment

      # As the service: all egress through the module's network, which
      # reaches Google APIs on 443 and nothing else (network.tf).
      vpc_access {
        egress = google_cloud_run_v2_service.sandbox.template[0].vpc_access[0].egress
        network_interfaces {
          network    = google_compute_network.egress.id
          subnetwork = google_compute_subnetwork.egress.id
        }
      }

      containers {
        image = var.image
        args  = ["bulk"]

        resources {
          limits = {
            cpu    = coalesce(var.bulk_job.cpu, var.cpu)
            memory = coalesce(var.bulk_job.memory, var.memory)
          }
        }

        # The service's environment, variable for variable, as Terraform sets
        # it (service.tf and local.env): the store, the limits and the start-up
        # rules on them, MAX_CONCURRENT_EVALUATIONS, PROCESS_KILL, and what
        # var.env adds, such as WORKER_LOCKDOWN; COMPILATION_CACHE_DIR is the
        # image's own. BULK_SCRIPT, BULK_INPUTS and BULK_RESULTS are an
        # execution's, set by gcloud run jobs execute --update-env-vars.
        dynamic "env" {
          for_each = { for e in google_cloud_run_v2_service.sandbox.template[0].containers[0].env : e.name => e.value }
          content {
            name  = env.key
            value = env.value
          }
        }
      }
    }
  }

  lifecycle {
    # As the service's: Terraform sets the image when it creates the job, and
    # each rollout of cloudbuild.yaml moves it to the image that took the
    # service's traffic (README.md, "Bulk runs"); gcloud records itself as
    # the client.
    ignore_changes = [
      template[0].template[0].containers[0].image,
      client,
      client_version,
    ]

    precondition {
      condition     = var.scripts_bucket_enabled
      error_message = "bulk_job needs the scripts bucket (scripts_bucket_enabled = true): BULK_SCRIPT is a reference into the script store, and in the credential-free mode there is none."
    }

    precondition {
      condition     = var.bulk_job.bucket != local.bucket_name || !anytrue([for p in [var.bulk_job.inputs_prefix, var.bulk_job.results_prefix] : startswith(p, "sha256/")])
      error_message = "bulk_job.inputs_prefix and bulk_job.results_prefix must not lie under sha256/ of the scripts bucket: stored scripts are never replaced or deleted."
    }
  }
}

# Read the inputs: get and list objects under inputs_prefix, nothing else of
# the bucket.
resource "google_storage_bucket_iam_member" "bulk_reads_inputs" {
  count = local.bulk_enabled ? 1 : 0

  bucket = var.bulk_job.bucket
  role   = "roles/storage.objectViewer"
  member = "serviceAccount:${google_service_account.runtime.email}"

  condition {
    title       = "${var.name} bulk inputs"
    description = "The bulk job reads its inputs: objects under ${var.bulk_job.inputs_prefix} only."
    expression  = local.bulk_conditions.inputs
  }
}

# Write the results: a shard's results and manifest replace those of an
# earlier run, and replacing an object needs storage.objects.delete as well as
# create. roles/storage.objectUser is the predefined role with both (and get,
# list, update, restore and multipart uploads), under results_prefix only.
resource "google_storage_bucket_iam_member" "bulk_writes_results" {
  count = local.bulk_enabled ? 1 : 0

  bucket = var.bulk_job.bucket
  role   = "roles/storage.objectUser"
  member = "serviceAccount:${google_service_account.runtime.email}"

  condition {
    title       = "${var.name} bulk results"
    description = "The bulk job creates, replaces and deletes its results: objects under ${var.bulk_job.results_prefix} only."
    expression  = local.bulk_conditions.results
  }
}

# The deployers roll the job's image as they roll the service's (service.tf):
# cloudbuild.yaml's last step moves the job to the image that passed the
# conformance kit and took the traffic. roles/run.developer on this job alone
# (describe and update it); the job runs as the runtime service account,
# which the deployers may already act as.
resource "google_cloud_run_v2_job_iam_member" "bulk_deployers" {
  for_each = local.bulk_enabled ? toset(var.deployers) : toset([])

  project  = google_cloud_run_v2_job.bulk[0].project
  location = google_cloud_run_v2_job.bulk[0].location
  name     = google_cloud_run_v2_job.bulk[0].name
  role     = "roles/run.developer"
  member   = each.value
}
