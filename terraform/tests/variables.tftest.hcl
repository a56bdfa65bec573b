# Every input's validation: each run gives refused values and expects exactly
# those variables to fail (a run fails if one of them is accepted); the
# accepted_* runs give values at the edges that must plan. Runs group values
# of different variables; a variable needs one run per refused value.
# (See service.tftest.hcl for how these tests run.)

mock_provider "google" {
  mock_resource "google_service_account" {
    defaults = {
      name   = "projects/my-project/serviceAccounts/sandbox-cloudrun-runtime@my-project.iam.gserviceaccount.com"
      email  = "sandbox-cloudrun-runtime@my-project.iam.gserviceaccount.com"
      member = "serviceAccount:sandbox-cloudrun-runtime@my-project.iam.gserviceaccount.com"
    }
  }
}

variables {
  project_id      = "my-project"
  region          = "europe-west1"
  image           = "registry.example/my-project/sandbox/sandbox-cloudrun:0123abc"
  invoker_members = ["serviceAccount:loom@my-project.iam.gserviceaccount.com", "user:you@example.com"]
}

run "invoker_members_never_empty" {
  command = plan

  variables {
    invoker_members = []
  }

  expect_failures = [var.invoker_members]
}

run "public_members_refused" {
  command = plan

  variables {
    invoker_members = ["user:you@example.com", "allAuthenticatedUsers"]
    script_writers  = ["allUsers"]
    deployers       = ["allAuthenticatedUsers"]
  }

  expect_failures = [var.invoker_members, var.script_writers, var.deployers]
}

run "invoker_members_allusers_refused" {
  command = plan

  variables {
    invoker_members = ["allUsers"]
  }

  expect_failures = [var.invoker_members]
}

run "members_need_a_type_prefix" {
  command = plan

  variables {
    invoker_members = ["you@example.com"]
    script_writers  = ["you@example.com"]
    deployers       = ["domain:example.com"]
  }

  expect_failures = [var.invoker_members, var.script_writers, var.deployers]
}

run "image_refused_without_a_tag_or_digest" {
  command = plan

  variables {
    image   = "sandbox-cloudrun"
    ingress = "all"
    cpu     = "0.5"
    memory  = "256Mi"
  }

  expect_failures = [var.image, var.ingress, var.cpu, var.memory]
}

run "image_latest_refused" {
  command = plan

  variables {
    image  = "registry.example/my-project/sandbox/sandbox-cloudrun:latest"
    cpu    = "16"
    memory = "64Gi"
  }

  expect_failures = [var.image, var.cpu, var.memory]
}

run "image_placeholder_refused" {
  command = plan

  variables {
    image  = "REGISTRY/my-project/sandbox/sandbox-cloudrun:COMMIT_SHA"
    memory = "1G"
  }

  expect_failures = [var.image, var.memory]
}

run "durations_in_whole_seconds" {
  command = plan

  variables {
    request_timeout = "1m"
    max_wall_clock  = "500ms"
    memory          = "1024"
  }

  expect_failures = [var.request_timeout, var.max_wall_clock, var.memory]
}

run "durations_with_a_unit" {
  command = plan

  variables {
    request_timeout = "60"
    max_wall_clock  = "30"
  }

  expect_failures = [var.request_timeout, var.max_wall_clock]
}

run "durations_at_most_an_hour" {
  command = plan

  variables {
    request_timeout = "3601s"
    max_wall_clock  = "3601s"
  }

  expect_failures = [var.request_timeout, var.max_wall_clock]
}

run "durations_above_zero" {
  command = plan

  variables {
    request_timeout = "0s"
    max_wall_clock  = "0s"
  }

  expect_failures = [var.request_timeout, var.max_wall_clock]
}

run "instances_whole_numbers" {
  command = plan

  variables {
    min_instances                     = 1.5
    max_instances                     = 2.5
    soft_delete_retention_days        = 7.5
    noncurrent_version_retention_days = 1.5
  }

  expect_failures = [var.min_instances, var.max_instances, var.soft_delete_retention_days, var.noncurrent_version_retention_days]
}

run "numbers_in_range" {
  command = plan

  variables {
    min_instances                     = -1
    max_instances                     = 0
    soft_delete_retention_days        = 6
    noncurrent_version_retention_days = 0
    alert_5xx_ratio                   = 0
    alert_429_ratio                   = 1
    alert_p99_latency_ms              = 0
  }

  expect_failures = [
    var.min_instances, var.max_instances, var.soft_delete_retention_days, var.noncurrent_version_retention_days,
    var.alert_5xx_ratio, var.alert_429_ratio, var.alert_p99_latency_ms,
  ]
}

run "soft_delete_at_most_90_days" {
  command = plan

  variables {
    soft_delete_retention_days = 91
    alert_5xx_ratio            = 1.5
    alert_429_ratio            = -0.1
    alert_p99_latency_ms       = -5
  }

  expect_failures = [var.soft_delete_retention_days, var.alert_5xx_ratio, var.alert_429_ratio, var.alert_p99_latency_ms]
}

run "names_refused" {
  command = plan

  variables {
    project_id  = "My Project"
    region      = "europe"
    name        = "a-name-that-is-far-too-long"
    bucket_name = "My_Bucket"
  }

  expect_failures = [var.project_id, var.region, var.name, var.bucket_name]
}

run "names_ending_badly_refused" {
  command = plan

  variables {
    name        = "sandbox-"
    bucket_name = "scripts-"
    subnet_cidr = "10.8.0.0/27"
  }

  expect_failures = [var.name, var.bucket_name, var.subnet_cidr]
}

run "exporters_and_levels_refused" {
  command = plan

  variables {
    otel_exporter         = "otlp"
    log_level             = "trace"
    subnet_cidr           = "10.8.0.0/8"
    notification_channels = ["email:you@example.com"]
  }

  expect_failures = [var.otel_exporter, var.log_level, var.subnet_cidr, var.notification_channels]
}

# env may not override what the module sets for hardening: one run per name.

run "env_refuses_max_concurrent_evaluations" {
  command = plan

  variables {
    env = { MAX_CONCURRENT_EVALUATIONS = "8" }
  }

  expect_failures = [var.env]
}

run "env_refuses_process_kill" {
  command = plan

  variables {
    env = { PROCESS_KILL = "false" }
  }

  expect_failures = [var.env]
}

run "env_refuses_store_url" {
  command = plan

  variables {
    env = { STORE_URL = "gs://elsewhere" }
  }

  expect_failures = [var.env]
}

run "env_refuses_request_timeout" {
  command = plan

  variables {
    env = { REQUEST_TIMEOUT = "3600s" }
  }

  expect_failures = [var.env]
}

run "env_refuses_max_wall_clock" {
  command = plan

  variables {
    env = { MAX_WALL_CLOCK = "3600s" }
  }

  expect_failures = [var.env]
}

run "env_refuses_port" {
  command = plan

  variables {
    env = { PORT = "9090" }
  }

  expect_failures = [var.env]
}

run "env_refuses_compilation_cache_dir" {
  command = plan

  variables {
    env = { COMPILATION_CACHE_DIR = "/tmp" }
  }

  expect_failures = [var.env]
}

run "env_refuses_auth_audience" {
  command = plan

  variables {
    env = { AUTH_AUDIENCE = "https://elsewhere.example" }
  }

  expect_failures = [var.env]
}

run "env_refuses_auth_allowed_callers" {
  command = plan

  variables {
    env = { AUTH_ALLOWED_CALLERS = "someone@example.com" }
  }

  expect_failures = [var.env]
}

run "env_refuses_otel_exporter" {
  command = plan

  variables {
    env = { OTEL_EXPORTER = "otlp" }
  }

  expect_failures = [var.env]
}

run "env_refuses_log_level" {
  command = plan

  variables {
    env = { LOG_LEVEL = "debug" }
  }

  expect_failures = [var.env]
}

# Values at the edges, which must plan.

run "accepted_edges" {
  command = plan

  variables {
    invoker_members                   = ["serviceAccount:loom@my-project.iam.gserviceaccount.com", "group:g@example.com", "domain:example.com", "principalSet://iam.googleapis.com/locations/global/workforcePools/p/*"]
    script_writers                    = []
    deployers                         = ["serviceAccount:123456789-compute@developer.gserviceaccount.com"]
    image                             = "registry.example/my-project/sandbox/sandbox-cloudrun@sha256:abababababababababababababababababababababababababababababababab"
    ingress                           = "INGRESS_TRAFFIC_INTERNAL_ONLY"
    request_timeout                   = "3600s"
    max_wall_clock                    = "1s"
    cpu                               = "8"
    memory                            = "32Gi"
    min_instances                     = 0
    max_instances                     = 1
    soft_delete_retention_days        = 90
    noncurrent_version_retention_days = 1
    name                              = "sbox"
    bucket_name                       = "a_b"
    subnet_cidr                       = "10.8.0.0/26"
    log_level                         = "debug"
    otel_exporter                     = "stdout"
    notification_channels             = ["123", "projects/other-project/notificationChannels/456"]
    alert_5xx_ratio                   = 0.5
    alert_429_ratio                   = 0.01
    alert_p99_latency_ms              = 1
  }
}

run "accepted_small_memory" {
  command = plan

  variables {
    memory          = "512Mi"
    request_timeout = "1s"
    max_wall_clock  = "1s"
    env             = { HARD_KILL_GRACE = "1ns", DEFAULT_WALL_CLOCK = "1s" }
  }

  # 1s + 2 x 1ns is not below 1s; the variables themselves are accepted.
  expect_failures = [google_cloud_run_v2_service.sandbox]
}

# null stands for the default, as examples/basic passes its unset inputs.

run "null_means_the_default" {
  command = plan

  variables {
    ingress             = null
    request_timeout     = null
    max_wall_clock      = null
    cpu                 = null
    memory              = null
    min_instances       = null
    max_instances       = null
    deletion_protection = null
    env                 = null
    script_writers      = null
    deployers           = null
    monitoring_enabled  = null
  }

  assert {
    condition = output.service_settings == {
      ingress             = "INGRESS_TRAFFIC_INTERNAL_LOAD_BALANCER"
      request_timeout     = "60s"
      cpu                 = "1"
      memory              = "1Gi"
      min_instances       = 0
      max_instances       = 10
      deletion_protection = true
      env                 = output.service_settings.env
    }
    error_message = "A null input must stand for the module's default."
  }
  assert {
    condition     = output.service_settings.env["MAX_WALL_CLOCK"] == "30s" && length(google_monitoring_dashboard.sandbox) == 1
    error_message = "A null max_wall_clock or monitoring_enabled must stand for the default."
  }
}
