# The Cloud Run service: one request per instance, the request timeout as the
# hard kill, gen2, all egress through the module's network, who may invoke it,
# its identity, limits, probes, and the start-up rules of the service.
#
#   tofu init -backend=false && tofu test     (in terraform/)
#
# mock_provider plans against the provider's real schema with no credentials.
# Runs that compare values the provider computes (ids, emails) apply to the
# mock, since a plan leaves those unknown; the others only plan.

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

run "one_request_per_instance" {
  command = plan

  variables {
    max_instances = 50
  }

  assert {
    condition     = google_cloud_run_v2_service.sandbox.template[0].max_instance_request_concurrency == 1
    error_message = "max_instance_request_concurrency must be 1 whatever the other inputs: an evaluation owns its instance."
  }
  assert {
    condition     = output.service_settings.env["MAX_CONCURRENT_EVALUATIONS"] == "1"
    error_message = "The container must run with MAX_CONCURRENT_EVALUATIONS=1."
  }
  assert {
    condition     = output.service_settings.env["PROCESS_KILL"] == "true"
    error_message = "The container must run with PROCESS_KILL=true, the kernel backstop of the hard kill."
  }
}

run "request_timeout_is_the_hard_kill" {
  command = plan

  variables {
    request_timeout = "123s"
    max_wall_clock  = "100s"
  }

  assert {
    condition     = google_cloud_run_v2_service.sandbox.template[0].timeout == "123s"
    error_message = "The platform's request timeout must follow request_timeout."
  }
  assert {
    condition     = output.service_settings.env["REQUEST_TIMEOUT"] == "123s"
    error_message = "REQUEST_TIMEOUT must equal the platform's request timeout, so that the process's own hard kill fires first."
  }
  assert {
    condition     = output.service_settings.env["MAX_WALL_CLOCK"] == "100s"
    error_message = "MAX_WALL_CLOCK must follow max_wall_clock."
  }
}

run "request_timeout_default" {
  command = plan

  assert {
    condition     = google_cloud_run_v2_service.sandbox.template[0].timeout == "60s" && output.service_settings.env["REQUEST_TIMEOUT"] == "60s"
    error_message = "The default request timeout is 60s, on the platform and in the container alike."
  }
}

run "gen2" {
  command = plan

  assert {
    condition     = google_cloud_run_v2_service.sandbox.template[0].execution_environment == "EXECUTION_ENVIRONMENT_GEN2"
    error_message = "The service must run in the second-generation execution environment (the process-kill backstop and direct VPC egress need it)."
  }
}

run "all_egress_through_the_module_network" {
  assert {
    condition     = google_cloud_run_v2_service.sandbox.template[0].vpc_access[0].egress == "ALL_TRAFFIC"
    error_message = "vpc_access.egress must be ALL_TRAFFIC: PRIVATE_RANGES_ONLY sends public traffic around the firewall."
  }
  assert {
    condition     = google_cloud_run_v2_service.sandbox.template[0].vpc_access[0].connector == null
    error_message = "The service must use direct VPC egress, not a connector."
  }
  assert {
    condition     = google_cloud_run_v2_service.sandbox.template[0].vpc_access[0].network_interfaces[0].network == google_compute_network.egress.id
    error_message = "The service's network interface must be on the module's egress network."
  }
  assert {
    condition     = google_cloud_run_v2_service.sandbox.template[0].vpc_access[0].network_interfaces[0].subnetwork == google_compute_subnetwork.egress.id
    error_message = "The service's network interface must be in the module's egress subnet."
  }
}

run "ingress_internal_and_load_balancer_by_default" {
  command = plan

  assert {
    condition     = google_cloud_run_v2_service.sandbox.ingress == "INGRESS_TRAFFIC_INTERNAL_LOAD_BALANCER"
    error_message = "ingress must default to INGRESS_TRAFFIC_INTERNAL_LOAD_BALANCER (the API's default is INGRESS_TRAFFIC_ALL)."
  }
}

run "ingress_as_given" {
  command = plan

  variables {
    ingress = "INGRESS_TRAFFIC_ALL"
  }

  assert {
    condition     = google_cloud_run_v2_service.sandbox.ingress == "INGRESS_TRAFFIC_ALL"
    error_message = "ingress must follow the ingress input."
  }
}

run "invoker_iam_never_disabled" {
  command = plan

  assert {
    condition     = google_cloud_run_v2_service.sandbox.invoker_iam_disabled == false
    error_message = "invoker_iam_disabled must be false: every request needs an invoker's ID token."
  }
}

run "dedicated_runtime_identity" {
  assert {
    condition     = google_cloud_run_v2_service.sandbox.template[0].service_account == google_service_account.runtime.email
    error_message = "The service must run as the module's runtime service account, not the Compute Engine default."
  }
  assert {
    condition     = google_service_account.runtime.account_id == "sandbox-cloudrun-runtime"
    error_message = "The runtime service account is NAME-runtime."
  }
}

run "deletion_protection_on_by_default" {
  command = plan

  assert {
    condition     = google_cloud_run_v2_service.sandbox.deletion_protection == true
    error_message = "deletion_protection must default to true."
  }
}

run "deletion_protection_from_variable" {
  command = plan

  variables {
    deletion_protection = false
  }

  assert {
    condition     = google_cloud_run_v2_service.sandbox.deletion_protection == false
    error_message = "deletion_protection must follow the deletion_protection input."
  }
}

run "limits_and_scaling_by_default" {
  command = plan

  assert {
    condition     = google_cloud_run_v2_service.sandbox.template[0].containers[0].resources[0].limits == tomap({ cpu = "1", memory = "1Gi" })
    error_message = "The default limits are 1 CPU and 1Gi."
  }
  assert {
    condition     = google_cloud_run_v2_service.sandbox.template[0].containers[0].resources[0].cpu_idle == true
    error_message = "CPU must be allocated only during requests by default."
  }
  assert {
    condition     = google_cloud_run_v2_service.sandbox.template[0].containers[0].resources[0].startup_cpu_boost == true
    error_message = "startup_cpu_boost must be on: it shortens cold starts."
  }
  assert {
    condition     = google_cloud_run_v2_service.sandbox.template[0].scaling[0].min_instance_count == 0 && google_cloud_run_v2_service.sandbox.template[0].scaling[0].max_instance_count == 10
    error_message = "The default scaling is 0 to 10 instances."
  }
}

run "limits_and_scaling_from_variables" {
  command = plan

  variables {
    cpu                  = "2"
    memory               = "2Gi"
    cpu_always_allocated = true
    min_instances        = 1
    max_instances        = 7
  }

  assert {
    condition     = google_cloud_run_v2_service.sandbox.template[0].containers[0].resources[0].limits == tomap({ cpu = "2", memory = "2Gi" })
    error_message = "The limits must follow cpu and memory."
  }
  assert {
    condition     = google_cloud_run_v2_service.sandbox.template[0].containers[0].resources[0].cpu_idle == false
    error_message = "cpu_always_allocated = true must keep CPU allocated (cpu_idle = false)."
  }
  assert {
    condition     = google_cloud_run_v2_service.sandbox.template[0].scaling[0].min_instance_count == 1 && google_cloud_run_v2_service.sandbox.template[0].scaling[0].max_instance_count == 7
    error_message = "Scaling must follow min_instances and max_instances."
  }
}

run "probes" {
  command = plan

  assert {
    condition     = google_cloud_run_v2_service.sandbox.template[0].containers[0].startup_probe[0].http_get[0].path == "/readyz"
    error_message = "The startup probe must be an HTTP GET of /readyz: ready once the engine is warm and the store reachable."
  }
  assert {
    condition     = google_cloud_run_v2_service.sandbox.template[0].containers[0].liveness_probe[0].http_get[0].path == "/healthz"
    error_message = "The liveness probe must be an HTTP GET of /healthz."
  }
  assert {
    condition     = google_cloud_run_v2_service.sandbox.template[0].containers[0].ports[0].container_port == 8080
    error_message = "The container listens on 8080."
  }
}

run "environment_by_default" {
  command = plan

  assert {
    condition     = output.service_settings.env["DEFAULT_WALL_CLOCK"] == "5s" && output.service_settings.env["LOG_LEVEL"] == "info" && output.service_settings.env["OTEL_EXPORTER"] == "none"
    error_message = "The default environment is DEFAULT_WALL_CLOCK=5s, LOG_LEVEL=info, OTEL_EXPORTER=none."
  }
  assert {
    condition     = !contains(keys(output.service_settings.env), "AUTH_AUDIENCE") && !contains(keys(output.service_settings.env), "AUTH_ALLOWED_CALLERS")
    error_message = "The service's own token check is off unless auth_audience is set."
  }
}

run "environment_passes_env_through" {
  command = plan

  variables {
    env = { POOL_SIZE = "4", HARD_KILL_GRACE = "2s", DEFAULT_WALL_CLOCK = "10s" }
  }

  assert {
    condition     = output.service_settings.env["POOL_SIZE"] == "4" && output.service_settings.env["HARD_KILL_GRACE"] == "2s" && output.service_settings.env["DEFAULT_WALL_CLOCK"] == "10s"
    error_message = "env must reach the container as given."
  }
}

run "auth_audience_allows_the_invokers_emails" {
  command = plan

  variables {
    auth_audience   = "https://sandbox.example"
    invoker_members = ["serviceAccount:loom@my-project.iam.gserviceaccount.com", "group:callers@example.com", "user:you@example.com"]
  }

  assert {
    condition     = output.service_settings.env["AUTH_AUDIENCE"] == "https://sandbox.example"
    error_message = "AUTH_AUDIENCE must follow auth_audience."
  }
  assert {
    condition     = output.service_settings.env["AUTH_ALLOWED_CALLERS"] == "loom@my-project.iam.gserviceaccount.com,you@example.com"
    error_message = "AUTH_ALLOWED_CALLERS must be the user: and serviceAccount: emails of invoker_members, in order."
  }
}

run "auth_audience_needs_an_email_invoker" {
  command = plan

  variables {
    auth_audience   = "https://sandbox.example"
    invoker_members = ["group:callers@example.com"]
  }

  expect_failures = [google_cloud_run_v2_service.sandbox]
}

# Terraform sets the image only when it creates the service; Cloud Build rolls
# images after that. The first run creates the service (in the mock) with one
# image; the second plans with another and must keep the first.
run "image_set_on_create" {
  assert {
    condition     = google_cloud_run_v2_service.sandbox.template[0].containers[0].image == "registry.example/my-project/sandbox/sandbox-cloudrun:0123abc"
    error_message = "The service must be created with the image input."
  }
}

run "image_then_left_to_cloud_build" {
  command = plan

  variables {
    image = "registry.example/my-project/sandbox/sandbox-cloudrun:4567def"
  }

  assert {
    condition     = google_cloud_run_v2_service.sandbox.template[0].containers[0].image == "registry.example/my-project/sandbox/sandbox-cloudrun:0123abc"
    error_message = "A changed image input must not change the deployed image: Cloud Build rolls images, and terraform apply must not revert them (lifecycle.ignore_changes)."
  }
}

# The start-up rule MAX_WALL_CLOCK + 2 x HARD_KILL_GRACE < REQUEST_TIMEOUT,
# with the grace the service will run with.

run "timeout_must_exceed_wall_clock_and_twice_the_grace" {
  command = plan

  variables {
    request_timeout = "31s"
    max_wall_clock  = "30s"
  }

  # 30s + 2 x 500ms + 1s = 32s: not below the timeout.
  expect_failures = [google_cloud_run_v2_service.sandbox]
}

run "timeout_at_wall_clock_twice_the_grace_and_a_second" {
  command = plan

  variables {
    request_timeout = "32s"
    max_wall_clock  = "30s"
  }

  # 30s + 2 x 500ms + 1s = 32s: the caller's deadline is the timeout.
  expect_failures = [google_cloud_run_v2_service.sandbox]
}

run "timeout_just_above_wall_clock_and_twice_the_grace" {
  command = plan

  variables {
    request_timeout = "33s"
    max_wall_clock  = "30s"
  }
}

run "hard_kill_grace_from_env_breaks_the_rule" {
  command = plan

  variables {
    env = { HARD_KILL_GRACE = "15s" }
  }

  # 30s + 2 x 15s + 1s = 61s: not below the 60s timeout.
  expect_failures = [google_cloud_run_v2_service.sandbox]
}

run "hard_kill_grace_from_env_in_minutes_breaks_the_rule" {
  command = plan

  variables {
    env = { HARD_KILL_GRACE = "1m" }
  }

  expect_failures = [google_cloud_run_v2_service.sandbox]
}

run "hard_kill_grace_in_ms_breaks_the_rule" {
  command = plan

  variables {
    env = { HARD_KILL_GRACE = "15000ms" }
  }

  # 30s + 2 x 15s + 1s = 61s, written in milliseconds.
  expect_failures = [google_cloud_run_v2_service.sandbox]
}

run "hard_kill_grace_from_env_within_the_rule" {
  command = plan

  variables {
    env = { HARD_KILL_GRACE = "14499ms" }
  }

  # 30s + 2 x 14.499s + 1s = 59.998s, below 60s.
  assert {
    condition     = output.service_settings.env["HARD_KILL_GRACE"] == "14499ms"
    error_message = "HARD_KILL_GRACE must reach the container as given."
  }
}

run "hard_kill_grace_compound_duration" {
  command = plan

  variables {
    request_timeout = "200s"
    max_wall_clock  = "100s"
    env             = { HARD_KILL_GRACE = "1m30s" }
  }

  # 100s + 2 x 90s + 1s = 281s: not below 200s; read as 1m, it would pass.
  expect_failures = [google_cloud_run_v2_service.sandbox]
}

run "hard_kill_grace_above_one_minute" {
  command = plan

  variables {
    request_timeout = "3600s"
    env             = { HARD_KILL_GRACE = "61s" }
  }

  # Within the timeout rule, but the service refuses a grace above 1m.
  expect_failures = [google_cloud_run_v2_service.sandbox]
}

run "hard_kill_grace_not_a_duration" {
  command = plan

  variables {
    env = { HARD_KILL_GRACE = "2 seconds" }
  }

  expect_failures = [var.env]
}

run "default_wall_clock_from_env_above_the_max" {
  command = plan

  variables {
    env = { DEFAULT_WALL_CLOCK = "45s" }
  }

  expect_failures = [google_cloud_run_v2_service.sandbox]
}

run "default_wall_clock_not_a_duration" {
  command = plan

  variables {
    env = { DEFAULT_WALL_CLOCK = "10" }
  }

  expect_failures = [var.env]
}

run "default_wall_clock_follows_a_small_max" {
  command = plan

  variables {
    request_timeout = "10s"
    max_wall_clock  = "3s"
  }

  assert {
    condition     = output.service_settings.env["DEFAULT_WALL_CLOCK"] == "3s"
    error_message = "DEFAULT_WALL_CLOCK must not exceed MAX_WALL_CLOCK: min(5s, max_wall_clock)."
  }
}

run "min_instances_above_max" {
  command = plan

  variables {
    min_instances = 5
    max_instances = 2
  }

  expect_failures = [google_cloud_run_v2_service.sandbox]
}
