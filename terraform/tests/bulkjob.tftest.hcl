# The opt-in Cloud Run job for bulk runs (bulkjob.tf): nothing when disabled;
# when enabled, the service's image, identity, environment, execution
# environment and network, args ["bulk"], grants to the runtime identity
# that stop at the bulk prefixes of one bucket, and roles/run.developer on the
# job for each of the deployers, who move it to each image they roll out (see
# service.tftest.hcl for how these tests run).

mock_provider "google" {
  mock_resource "google_service_account" {
    defaults = {
      name   = "projects/my-project/serviceAccounts/sandbox-cloudrun-runtime@my-project.iam.gserviceaccount.com"
      email  = "sandbox-cloudrun-runtime@my-project.iam.gserviceaccount.com"
      member = "serviceAccount:sandbox-cloudrun-runtime@my-project.iam.gserviceaccount.com"
    }
  }
  mock_resource "google_compute_network" {
    defaults = {
      id = "projects/my-project/global/networks/sandbox-cloudrun-egress"
    }
  }
  mock_resource "google_compute_subnetwork" {
    defaults = {
      id = "projects/my-project/regions/europe-west1/subnetworks/sandbox-cloudrun-egress"
    }
  }
}

variables {
  project_id      = "my-project"
  region          = "europe-west1"
  image           = "registry.example/my-project/sandbox/sandbox-cloudrun:0123abc"
  invoker_members = ["serviceAccount:loom@my-project.iam.gserviceaccount.com", "user:you@example.com"]
}

run "disabled_by_default" {
  command = plan

  assert {
    condition     = length(google_cloud_run_v2_job.bulk) == 0
    error_message = "Without bulk_job.enabled there is no job."
  }
  assert {
    condition     = length(google_storage_bucket_iam_member.bulk_reads_inputs) == 0 && length(google_storage_bucket_iam_member.bulk_writes_results) == 0
    error_message = "Without bulk_job.enabled the runtime service account gets no bulk grant."
  }
  assert {
    condition     = output.bulk_job_name == null
    error_message = "bulk_job_name is null without the job."
  }
}

run "disabled_with_a_bucket_named" {
  command = plan

  variables {
    bulk_job = { bucket = "my-bulk", task_count = 4 }
  }

  assert {
    condition     = length(google_cloud_run_v2_job.bulk) == 0 && length(google_storage_bucket_iam_member.bulk_reads_inputs) == 0 && length(google_storage_bucket_iam_member.bulk_writes_results) == 0
    error_message = "Naming a bucket enables nothing: only bulk_job.enabled creates the job and its grants."
  }
}

run "disabled_no_deployer_grant" {
  command = plan

  variables {
    deployers = ["serviceAccount:builder@my-project.iam.gserviceaccount.com"]
  }

  assert {
    condition     = length(google_cloud_run_v2_job_iam_member.bulk_deployers) == 0
    error_message = "Without the job the deployers get no grant on it."
  }
  assert {
    condition     = length(google_cloud_run_v2_service_iam_member.deployers) == 1
    error_message = "The deployers keep their grant on the service."
  }
}

run "enabled_deployers_move_the_job" {
  command = plan

  variables {
    bulk_job  = { enabled = true, bucket = "my-bulk" }
    deployers = ["serviceAccount:builder@my-project.iam.gserviceaccount.com", "user:release@example.com"]
  }

  assert {
    condition = (
      length(google_cloud_run_v2_job_iam_member.bulk_deployers) == 2 &&
      toset([for g in google_cloud_run_v2_job_iam_member.bulk_deployers : g.member]) == toset(["serviceAccount:builder@my-project.iam.gserviceaccount.com", "user:release@example.com"])
    )
    error_message = "Each of the deployers gets one grant on the job."
  }
  assert {
    condition = alltrue([
      for g in google_cloud_run_v2_job_iam_member.bulk_deployers :
      g.role == "roles/run.developer" && g.name == "sandbox-cloudrun-bulk" && g.project == "my-project" && g.location == "europe-west1"
    ])
    error_message = "The deployers' grant is roles/run.developer on the bulk job, in the service's project and region: what cloudbuild.yaml needs to move the job's image."
  }
}

run "engine_faults_of_the_job_alert" {
  command = plan

  variables {
    bulk_job = { enabled = true, bucket = "my-bulk" }
  }

  assert {
    condition = length(google_logging_metric.bulk_engine_faults) == 1 && alltrue([for term in [
      "resource.type=\"cloud_run_job\"",
      "resource.labels.job_name=\"sandbox-cloudrun-bulk\"",
      "jsonPayload.message=\"engine fault\"",
      "severity>=ERROR",
    ] : strcontains(google_logging_metric.bulk_engine_faults[0].filter, term)])
    error_message = "The job's tasks' \"engine fault\" lines, at ERROR, of this job only, are counted."
  }
  assert {
    condition     = length(regexall(" AND ", google_logging_metric.bulk_engine_faults[0].filter)) == 3 && length(regexall(" OR |NOT ", google_logging_metric.bulk_engine_faults[0].filter)) == 0
    error_message = "The job's engine-fault metric's filter must be the four terms joined by AND, and nothing else."
  }
  assert {
    condition = (length(google_monitoring_alert_policy.engine_faults[0].conditions) == 2 &&
      one(google_monitoring_alert_policy.engine_faults[0].conditions[1].condition_threshold).filter == "metric.type=\"logging.googleapis.com/user/sandbox-cloudrun-bulk-engine-faults\" AND resource.type=\"cloud_run_job\"" &&
      one(google_monitoring_alert_policy.engine_faults[0].conditions[1].condition_threshold).threshold_value == 0 &&
      one(google_monitoring_alert_policy.engine_faults[0].conditions[1].condition_threshold).comparison == "COMPARISON_GT" &&
    one(one(google_monitoring_alert_policy.engine_faults[0].conditions[1].condition_threshold).aggregations).cross_series_reducer == "REDUCE_SUM")
    error_message = "The engine-fault alert fires on one line of the job too: a second condition, on the job's metric, above 0."
  }
  assert {
    condition     = strcontains(google_monitoring_alert_policy.engine_faults[0].documentation[0].content, urlencode(google_logging_metric.bulk_engine_faults[0].filter))
    error_message = "The engine-fault alert's documentation links the job's lines too."
  }
}

run "engine_faults_without_the_job" {
  command = plan

  assert {
    condition     = length(google_logging_metric.bulk_engine_faults) == 0 && length(google_monitoring_alert_policy.engine_faults[0].conditions) == 1 && !strcontains(google_monitoring_alert_policy.engine_faults[0].documentation[0].content, "-bulk")
    error_message = "Without the job, no job metric, and the alert has its one condition."
  }
}

run "engine_faults_of_the_job_without_monitoring" {
  command = plan

  variables {
    bulk_job           = { enabled = true, bucket = "my-bulk" }
    monitoring_enabled = false
  }

  assert {
    condition     = length(google_logging_metric.bulk_engine_faults) + length(google_logging_metric.bulk_evaluations) + length(google_monitoring_alert_policy.engine_faults) + length(google_monitoring_dashboard.sandbox) == 0
    error_message = "monitoring_enabled = false creates no metric and no dashboard for the job either."
  }
}

run "the_job_on_the_dashboard" {
  variables {
    bulk_job = { enabled = true, bucket = "my-bulk", parallelism = 4 }
  }

  assert {
    condition = (length(google_logging_metric.bulk_evaluations) == 1 &&
      google_logging_metric.bulk_evaluations[0].name == "sandbox-cloudrun-bulk-evaluations" &&
      google_logging_metric.bulk_evaluations[0].filter == "resource.type=\"cloud_run_job\" AND resource.labels.job_name=\"sandbox-cloudrun-bulk\" AND jsonPayload.message=\"evaluation\"" &&
      google_logging_metric.bulk_evaluations[0].label_extractors == tomap({ outcome = "EXTRACT(jsonPayload.outcome)" }) &&
    google_logging_metric.bulk_evaluations[0].metric_descriptor[0].metric_kind == "DELTA" && google_logging_metric.bulk_evaluations[0].metric_descriptor[0].value_type == "INT64")
    error_message = "The job's tasks' evaluation lines, one for each input, of this job only, are counted by outcome."
  }
  assert {
    condition = { for t in jsondecode(google_monitoring_dashboard.sandbox[0].dashboard_json).mosaicLayout.tiles :
      t.widget.title => one(t.widget.xyChart.dataSets).timeSeriesQuery.timeSeriesFilter.filter if startswith(t.widget.title, "Bulk job: ")
      } == {
      "Bulk job: inputs run per minute, by outcome"            = "metric.type=\"logging.googleapis.com/user/sandbox-cloudrun-bulk-evaluations\" AND resource.type=\"cloud_run_job\""
      "Bulk job: task attempts ended per 5 minutes, by result" = "metric.type=\"run.googleapis.com/job/completed_task_attempt_count\" AND resource.type=\"cloud_run_job\" AND resource.labels.job_name=\"sandbox-cloudrun-bulk\""
      "Bulk job: tasks running (parallelism: 4)"               = "metric.type=\"run.googleapis.com/job/running_task_attempts\" AND resource.type=\"cloud_run_job\" AND resource.labels.job_name=\"sandbox-cloudrun-bulk\""
      "Bulk job: engine faults, per 5 minutes"                 = "metric.type=\"logging.googleapis.com/user/sandbox-cloudrun-bulk-engine-faults\" AND resource.type=\"cloud_run_job\""
    }
    error_message = "The dashboard charts the job: its inputs by outcome, its task attempts, its running tasks and its engine faults, each from the job's series."
  }
  assert {
    # the tiles tile: none overlaps another, all within the 48 columns
    condition = alltrue(flatten([
      for i, a in jsondecode(google_monitoring_dashboard.sandbox[0].dashboard_json).mosaicLayout.tiles : concat([a.xPos + a.width <= 48], [
        for j, b in jsondecode(google_monitoring_dashboard.sandbox[0].dashboard_json).mosaicLayout.tiles :
        i == j || a.xPos + a.width <= b.xPos || b.xPos + b.width <= a.xPos || a.yPos + a.height <= b.yPos || b.yPos + b.height <= a.yPos
      ])
    ])) && length(jsondecode(google_monitoring_dashboard.sandbox[0].dashboard_json).mosaicLayout.tiles) == 17
    error_message = "The job's four charts join the dashboard's thirteen tiles, none over another."
  }
}

run "the_dashboard_without_the_job" {
  assert {
    condition = length(google_logging_metric.bulk_evaluations) == 0 && length([
      for t in jsondecode(google_monitoring_dashboard.sandbox[0].dashboard_json).mosaicLayout.tiles : t if strcontains(t.widget.title, "Bulk")
    ]) == 0
    error_message = "Without the job, the dashboard has no chart of it, and no metric counts its lines."
  }
}

run "enabled_without_deployers" {
  command = plan

  variables {
    bulk_job = { enabled = true, bucket = "my-bulk" }
  }

  assert {
    condition     = length(google_cloud_run_v2_job_iam_member.bulk_deployers) == 0
    error_message = "Without deployers nobody gets a grant on the job."
  }
}

# Applied to the mock: the service account's email and the network's ids are
# the provider's to compute.
run "enabled_runs_as_the_service" {
  variables {
    bulk_job = { enabled = true, bucket = "my-bulk" }
    env      = { WORKER_LOCKDOWN = "best-effort", MAX_MEMORY_BYTES = "134217728", HARD_KILL_GRACE = "750ms" }
    cpu      = "2"
    memory   = "2Gi"
  }

  assert {
    condition     = length(google_cloud_run_v2_job.bulk) == 1 && google_cloud_run_v2_job.bulk[0].name == "sandbox-cloudrun-bulk" && output.bulk_job_name == "sandbox-cloudrun-bulk"
    error_message = "bulk_job.enabled creates one job, NAME-bulk, and bulk_job_name names it."
  }
  assert {
    condition     = google_cloud_run_v2_job.bulk[0].location == google_cloud_run_v2_service.sandbox.location && google_cloud_run_v2_job.bulk[0].project == google_cloud_run_v2_service.sandbox.project
    error_message = "The job must run in the service's project and region."
  }
  assert {
    condition     = google_cloud_run_v2_job.bulk[0].template[0].template[0].containers[0].image == google_cloud_run_v2_service.sandbox.template[0].containers[0].image
    error_message = "The job must run the service's image."
  }
  assert {
    condition     = google_cloud_run_v2_job.bulk[0].template[0].template[0].containers[0].args == tolist(["bulk"]) && google_cloud_run_v2_job.bulk[0].template[0].template[0].containers[0].command == null
    error_message = "The job's container must run the image's entrypoint with args [\"bulk\"]."
  }
  assert {
    condition     = google_cloud_run_v2_job.bulk[0].template[0].template[0].service_account == google_cloud_run_v2_service.sandbox.template[0].service_account && google_cloud_run_v2_job.bulk[0].template[0].template[0].service_account == google_service_account.runtime.email
    error_message = "The job must run as the service's runtime service account."
  }
  assert {
    condition     = google_cloud_run_v2_job.bulk[0].template[0].template[0].execution_environment == "EXECUTION_ENVIRONMENT_GEN2"
    error_message = "The job must run in the second-generation execution environment, as the service does."
  }
  assert {
    condition = (
      google_cloud_run_v2_job.bulk[0].template[0].template[0].vpc_access[0].egress == "ALL_TRAFFIC" &&
      google_cloud_run_v2_job.bulk[0].template[0].template[0].vpc_access[0].connector == null &&
      google_cloud_run_v2_job.bulk[0].template[0].template[0].vpc_access[0].network_interfaces == google_cloud_run_v2_service.sandbox.template[0].vpc_access[0].network_interfaces &&
      google_cloud_run_v2_job.bulk[0].template[0].template[0].vpc_access[0].network_interfaces[0].network == google_compute_network.egress.id &&
      google_cloud_run_v2_job.bulk[0].template[0].template[0].vpc_access[0].network_interfaces[0].subnetwork == google_compute_subnetwork.egress.id
    )
    error_message = "All of the job's egress must leave through the service's network and subnet (direct VPC egress, ALL_TRAFFIC)."
  }
  assert {
    condition     = { for e in google_cloud_run_v2_job.bulk[0].template[0].template[0].containers[0].env : e.name => e.value } == output.service_settings.env
    error_message = "The job's environment must be the service's, variable for variable."
  }
  assert {
    condition = alltrue([
      for k, v in {
        STORE_URL                  = "gs://my-project-sandbox-cloudrun-scripts"
        PROCESS_KILL               = "true"
        MAX_CONCURRENT_EVALUATIONS = "1"
        WORKER_LOCKDOWN            = "best-effort"
        MAX_MEMORY_BYTES           = "134217728"
        HARD_KILL_GRACE            = "750ms"
        REQUEST_TIMEOUT            = "60s"
        MAX_WALL_CLOCK             = "30s"
        } : anytrue([
          for e in google_cloud_run_v2_job.bulk[0].template[0].template[0].containers[0].env : e.name == k && e.value == v && output.service_settings.env[k] == v
      ])
    ])
    error_message = "The job must run with the service's lock-down and limits: STORE_URL, PROCESS_KILL, MAX_CONCURRENT_EVALUATIONS, WORKER_LOCKDOWN, MAX_MEMORY_BYTES, HARD_KILL_GRACE, REQUEST_TIMEOUT and MAX_WALL_CLOCK as the service has them."
  }
  assert {
    condition     = !anytrue([for e in google_cloud_run_v2_job.bulk[0].template[0].template[0].containers[0].env : contains(["COMPILATION_CACHE_DIR", "BULK_SCRIPT", "BULK_INPUTS", "BULK_RESULTS"], e.name)])
    error_message = "The job must take COMPILATION_CACHE_DIR from the image, as the service does, and leave BULK_SCRIPT, BULK_INPUTS and BULK_RESULTS to each execution."
  }
  assert {
    condition     = google_cloud_run_v2_job.bulk[0].template[0].template[0].containers[0].resources[0].limits == tomap({ cpu = "2", memory = "2Gi" })
    error_message = "A task's CPU and memory must default to the service's."
  }
  assert {
    condition = (
      google_cloud_run_v2_job.bulk[0].template[0].task_count == 1 &&
      google_cloud_run_v2_job.bulk[0].template[0].parallelism == 10 &&
      google_cloud_run_v2_job.bulk[0].template[0].template[0].timeout == "3600s" &&
      google_cloud_run_v2_job.bulk[0].template[0].template[0].max_retries == 3 &&
      google_cloud_run_v2_job.bulk[0].deletion_protection == true
    )
    error_message = "By default a job has 1 task, parallelism 10, a task timeout of 3600s, 3 retries and deletion protection."
  }
}

run "enabled_settings_from_the_variable" {
  command = plan

  variables {
    bulk_job = {
      enabled      = true
      bucket       = "my-bulk"
      task_count   = 50
      parallelism  = 5
      task_timeout = "7200s"
      max_retries  = 0
      cpu          = "4"
      memory       = "8Gi"
    }
    deletion_protection = false
  }

  assert {
    condition = (
      google_cloud_run_v2_job.bulk[0].template[0].task_count == 50 &&
      google_cloud_run_v2_job.bulk[0].template[0].parallelism == 5 &&
      google_cloud_run_v2_job.bulk[0].template[0].template[0].timeout == "7200s" &&
      google_cloud_run_v2_job.bulk[0].template[0].template[0].max_retries == 0
    )
    error_message = "task_count, parallelism, task_timeout and max_retries must follow bulk_job."
  }
  assert {
    condition     = google_cloud_run_v2_job.bulk[0].template[0].template[0].containers[0].resources[0].limits == tomap({ cpu = "4", memory = "8Gi" })
    error_message = "A task's CPU and memory must follow bulk_job.cpu and bulk_job.memory."
  }
  assert {
    condition     = google_cloud_run_v2_service.sandbox.template[0].containers[0].resources[0].limits == tomap({ cpu = "1", memory = "1Gi" })
    error_message = "bulk_job's CPU and memory must not change the service's."
  }
  assert {
    condition     = google_cloud_run_v2_job.bulk[0].deletion_protection == false
    error_message = "The job's deletion protection must follow deletion_protection."
  }
}

run "grants_stop_at_the_bulk_prefixes" {
  variables {
    bulk_job = { enabled = true, bucket = "my-bulk", inputs_prefix = "runs/in/", results_prefix = "runs/out/" }
  }

  assert {
    condition = (
      google_storage_bucket_iam_member.bulk_reads_inputs[0].bucket == "my-bulk" &&
      google_storage_bucket_iam_member.bulk_reads_inputs[0].role == "roles/storage.objectViewer" &&
      google_storage_bucket_iam_member.bulk_reads_inputs[0].member == "serviceAccount:${google_service_account.runtime.email}"
    )
    error_message = "The runtime service account reads the bulk bucket's objects: roles/storage.objectViewer, on that bucket."
  }
  assert {
    condition     = google_storage_bucket_iam_member.bulk_reads_inputs[0].condition[0].expression == "resource.name.startsWith(\"projects/_/buckets/my-bulk/objects/runs/in/\") || api.getAttribute(\"storage.googleapis.com/objectListPrefix\", \"\").startsWith(\"runs/in/\")"
    error_message = "The read grant must be conditioned on the objects under inputs_prefix, and listing under it."
  }
  assert {
    condition = (
      google_storage_bucket_iam_member.bulk_writes_results[0].bucket == "my-bulk" &&
      google_storage_bucket_iam_member.bulk_writes_results[0].role == "roles/storage.objectUser" &&
      google_storage_bucket_iam_member.bulk_writes_results[0].member == "serviceAccount:${google_service_account.runtime.email}"
    )
    error_message = "The runtime service account creates, replaces and deletes results: roles/storage.objectUser (create and delete), on the bulk bucket."
  }
  assert {
    condition     = google_storage_bucket_iam_member.bulk_writes_results[0].condition[0].expression == "resource.name.startsWith(\"projects/_/buckets/my-bulk/objects/runs/out/\") || api.getAttribute(\"storage.googleapis.com/objectListPrefix\", \"\").startsWith(\"runs/out/\")"
    error_message = "The write grant must be conditioned on the objects under results_prefix, and listing under it."
  }
  assert {
    condition = alltrue([
      for g in concat(google_storage_bucket_iam_member.bulk_reads_inputs, google_storage_bucket_iam_member.bulk_writes_results) :
      length(g.condition) == 1 && startswith(g.condition[0].expression, "resource.name.startsWith(\"projects/_/buckets/my-bulk/objects/runs/")
    ])
    error_message = "Every bulk grant must carry a condition on a prefix of the bulk bucket: none is unconditioned."
  }
  assert {
    condition     = length(google_storage_bucket_iam_member.runtime_reads_scripts) == 1 && google_storage_bucket_iam_member.runtime_reads_scripts[0].role == "roles/storage.objectViewer" && length(google_storage_bucket_iam_member.runtime_reads_scripts[0].condition) == 0
    error_message = "The runtime service account keeps its one grant on the scripts bucket, unchanged."
  }
}

run "grants_on_the_default_prefixes" {
  command = plan

  variables {
    bulk_job = { enabled = true, bucket = "my-bulk" }
  }

  assert {
    condition     = startswith(google_storage_bucket_iam_member.bulk_reads_inputs[0].condition[0].expression, "resource.name.startsWith(\"projects/_/buckets/my-bulk/objects/bulk/inputs/\") ||")
    error_message = "inputs_prefix defaults to bulk/inputs/."
  }
  assert {
    condition     = startswith(google_storage_bucket_iam_member.bulk_writes_results[0].condition[0].expression, "resource.name.startsWith(\"projects/_/buckets/my-bulk/objects/bulk/results/\") ||")
    error_message = "results_prefix defaults to bulk/results/."
  }
}

# Refused values: each run expects exactly these to fail.

run "enabled_needs_a_bucket" {
  command = plan

  variables {
    bulk_job = { enabled = true }
  }

  expect_failures = [var.bulk_job]
}

run "bucket_name_refused" {
  command = plan

  variables {
    bulk_job = { enabled = true, bucket = "gs://my-bulk" }
  }

  expect_failures = [var.bulk_job]
}

run "prefix_without_trailing_slash_refused" {
  command = plan

  variables {
    bulk_job = { enabled = true, bucket = "my-bulk", results_prefix = "bulk/results" }
  }

  expect_failures = [var.bulk_job]
}

run "prefix_with_a_quote_refused" {
  command = plan

  variables {
    bulk_job = { enabled = true, bucket = "my-bulk", inputs_prefix = "in\") || true || (\"/" }
  }

  expect_failures = [var.bulk_job]
}

run "prefix_leading_slash_refused" {
  command = plan

  variables {
    bulk_job = { enabled = true, bucket = "my-bulk", inputs_prefix = "/in/" }
  }

  expect_failures = [var.bulk_job]
}

run "prefix_dotdot_refused" {
  command = plan

  variables {
    bulk_job = { enabled = true, bucket = "my-bulk", results_prefix = "out/../in/" }
  }

  expect_failures = [var.bulk_job]
}

run "results_inside_inputs_refused" {
  command = plan

  variables {
    bulk_job = { enabled = true, bucket = "my-bulk", inputs_prefix = "bulk/", results_prefix = "bulk/results/" }
  }

  expect_failures = [var.bulk_job]
}

run "task_count_refused" {
  command = plan

  variables {
    bulk_job = { enabled = true, bucket = "my-bulk", task_count = 0 }
  }

  expect_failures = [var.bulk_job]
}

run "parallelism_refused" {
  command = plan

  variables {
    bulk_job = { enabled = true, bucket = "my-bulk", parallelism = 101 }
  }

  expect_failures = [var.bulk_job]
}

run "task_timeout_refused" {
  command = plan

  variables {
    bulk_job = { enabled = true, bucket = "my-bulk", task_timeout = "1h" }
  }

  expect_failures = [var.bulk_job]
}

run "max_retries_refused" {
  command = plan

  variables {
    bulk_job = { enabled = true, bucket = "my-bulk", max_retries = 11 }
  }

  expect_failures = [var.bulk_job]
}

run "cpu_refused" {
  command = plan

  variables {
    bulk_job = { enabled = true, bucket = "my-bulk", cpu = "0.5" }
  }

  expect_failures = [var.bulk_job]
}

run "memory_refused" {
  command = plan

  variables {
    bulk_job = { enabled = true, bucket = "my-bulk", memory = "256Mi" }
  }

  expect_failures = [var.bulk_job]
}

run "needs_the_scripts_bucket" {
  command = plan

  variables {
    bulk_job               = { enabled = true, bucket = "my-bulk" }
    scripts_bucket_enabled = false
  }

  expect_failures = [google_cloud_run_v2_job.bulk]
}

run "not_under_the_scripts_of_the_scripts_bucket" {
  command = plan

  variables {
    bulk_job = { enabled = true, bucket = "my-project-sandbox-cloudrun-scripts", results_prefix = "sha256/results/" }
  }

  expect_failures = [google_cloud_run_v2_job.bulk]
}

run "accepted_edges" {
  command = plan

  variables {
    bulk_job = {
      enabled        = true
      bucket         = "my.bulk_bucket-1"
      inputs_prefix  = "a/"
      results_prefix = "a.b/c_d-e/"
      task_count     = 10000
      parallelism    = 100
      task_timeout   = "86400s"
      max_retries    = 10
      cpu            = "8"
      memory         = "512Mi"
    }
  }

  assert {
    condition     = length(google_cloud_run_v2_job.bulk) == 1
    error_message = "Values at the edges of bulk_job must plan."
  }
}
