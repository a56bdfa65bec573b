# The example as an operator runs it: with the values of
# terraform.tfvars.example, and with each setting docs/deploy.md tells them
# to change. From examples/basic:
#
#   tofu init -backend=false && tofu test -var-file=terraform.tfvars.example
#
# (Terraform 1.7+: terraform test -var-file=terraform.tfvars.example.)
# mock_provider plans against the provider's real schema with no
# credentials; the runs that read computed values apply to the mock.

mock_provider "google" {
  mock_resource "google_service_account" {
    defaults = {
      name   = "projects/my-project/serviceAccounts/sandbox-cloudrun-runtime@my-project.iam.gserviceaccount.com"
      email  = "sandbox-cloudrun-runtime@my-project.iam.gserviceaccount.com"
      member = "serviceAccount:sandbox-cloudrun-runtime@my-project.iam.gserviceaccount.com"
    }
  }
}

# Copied as it is, the file still holds the placeholder image, which the
# example refuses with a message that says what to put there.
run "tfvars_example_as_copied" {
  command = plan

  expect_failures = [var.image]
}

# With the image of docs/deploy.md step 3 filled in, it plans and applies.
run "tfvars_example_with_the_image" {
  variables {
    image = "registry.example/my-project/sandbox/sandbox-cloudrun:0123abc"
  }

  assert {
    condition     = output.store_url == "gs://my-project-sandbox-cloudrun-scripts" && output.bucket_name == "my-project-sandbox-cloudrun-scripts"
    error_message = "The example keeps scripts in PROJECT_ID-sandbox-cloudrun-scripts."
  }
  assert {
    condition     = output.dashboard_url != null
    error_message = "The example turns monitoring on."
  }
  assert {
    condition = (output.service_settings.ingress == "INGRESS_TRAFFIC_INTERNAL_LOAD_BALANCER" && output.service_settings.request_timeout == "60s" &&
      output.service_settings.cpu == "1" && output.service_settings.memory == "1Gi" && output.service_settings.min_instances == 0 &&
    output.service_settings.max_instances == 10 && output.service_settings.deletion_protection == true)
    error_message = "Unset, the example's settings are the module's defaults."
  }
  assert {
    condition = alltrue([for api in ["run", "compute", "dns", "iam", "storage", "logging", "monitoring"] :
    contains(keys(google_project_service.apis), "${api}.googleapis.com")])
    error_message = "The example enables every API the module needs, Cloud Logging and Monitoring included."
  }
}

# docs/deploy.md: "set ingress = ..." (step 6) and the day-two settings.
run "guide_settings_reach_the_service" {
  variables {
    image               = "registry.example/my-project/sandbox/sandbox-cloudrun:0123abc"
    ingress             = "INGRESS_TRAFFIC_ALL"
    cpu                 = "2"
    memory              = "2Gi"
    min_instances       = 1
    max_instances       = 20
    request_timeout     = "120s"
    max_wall_clock      = "60s"
    env                 = { POOL_SIZE = "4", HARD_KILL_GRACE = "2s" }
    deletion_protection = false
  }

  assert {
    condition = (output.service_settings.ingress == "INGRESS_TRAFFIC_ALL" && output.service_settings.request_timeout == "120s" &&
      output.service_settings.cpu == "2" && output.service_settings.memory == "2Gi" && output.service_settings.min_instances == 1 &&
    output.service_settings.max_instances == 20 && output.service_settings.deletion_protection == false)
    error_message = "Each setting the guide tells operators to change must reach the service."
  }
  assert {
    condition     = output.service_settings.env["MAX_WALL_CLOCK"] == "60s" && output.service_settings.env["POOL_SIZE"] == "4" && output.service_settings.env["HARD_KILL_GRACE"] == "2s"
    error_message = "max_wall_clock and env must reach the container."
  }
}

run "credential_free_variant" {
  variables {
    image                  = "registry.example/my-project/sandbox/sandbox-cloudrun:0123abc"
    scripts_bucket_enabled = false
  }

  assert {
    condition     = output.store_url == "none" && output.bucket_name == null
    error_message = "scripts_bucket_enabled = false must run the service with STORE_URL=none and no bucket."
  }
}

run "monitoring_off" {
  command = plan

  variables {
    image              = "registry.example/my-project/sandbox/sandbox-cloudrun:0123abc"
    monitoring_enabled = false
  }

  assert {
    condition     = output.dashboard_url == null
    error_message = "monitoring_enabled = false must remove the dashboard."
  }
}

run "monitoring_settings_accepted" {
  variables {
    image                 = "registry.example/my-project/sandbox/sandbox-cloudrun:0123abc"
    notification_channels = ["1234567890"]
    alert_5xx_ratio       = 0.1
    alert_429_ratio       = 0.2
    alert_p99_latency_ms  = 5000
  }

  assert {
    condition     = output.dashboard_url != null
    error_message = "The monitoring settings plan with monitoring on."
  }
}
