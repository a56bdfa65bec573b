# Who may call the service, roll images or upload scripts: exactly the members
# given, never allUsers or allAuthenticatedUsers (see service.tftest.hcl for
# how these tests run; variables.tftest.hcl refuses public members as inputs).

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

run "invokers_exactly_as_given" {
  command = plan

  variables {
    invoker_members = ["serviceAccount:loom@my-project.iam.gserviceaccount.com", "group:callers@example.com", "user:you@example.com"]
  }

  assert {
    condition     = toset([for g in google_cloud_run_v2_service_iam_member.invokers : g.member]) == toset(["serviceAccount:loom@my-project.iam.gserviceaccount.com", "group:callers@example.com", "user:you@example.com"])
    error_message = "roles/run.invoker must go to each of invoker_members and nobody else."
  }
  assert {
    condition = alltrue([
      for g in google_cloud_run_v2_service_iam_member.invokers :
      g.role == "roles/run.invoker" && g.name == "sandbox-cloudrun" && g.location == "europe-west1" && g.project == "my-project"
    ])
    error_message = "The invoker grants must be roles/run.invoker on the module's service only."
  }
}

run "deployers_roll_images_only" {
  variables {
    deployers = ["serviceAccount:123456789-compute@developer.gserviceaccount.com"]
  }

  assert {
    condition     = [for g in google_cloud_run_v2_service_iam_member.deployers : [g.member, g.role, g.name]] == [["serviceAccount:123456789-compute@developer.gserviceaccount.com", "roles/run.developer", "sandbox-cloudrun"]]
    error_message = "Each deployer gets roles/run.developer on the service, which cannot change who may invoke it."
  }
  assert {
    condition = [for g in google_service_account_iam_member.deployers_act_as_runtime : [g.member, g.role, g.service_account_id]] == [[
      "serviceAccount:123456789-compute@developer.gserviceaccount.com", "roles/iam.serviceAccountUser", google_service_account.runtime.name,
    ]]
    error_message = "Each deployer may act as the runtime service account (to deploy revisions that run as it), and as no other."
  }
}

run "no_deployers_no_grants" {
  command = plan

  assert {
    condition     = length(google_cloud_run_v2_service_iam_member.deployers) == 0 && length(google_service_account_iam_member.deployers_act_as_runtime) == 0 && length(google_storage_bucket_iam_member.script_writers) == 0
    error_message = "Without deployers or script_writers there are no such grants."
  }
}

run "no_public_member_anywhere" {
  variables {
    invoker_members = ["serviceAccount:loom@my-project.iam.gserviceaccount.com", "domain:example.com"]
    script_writers  = ["group:uploaders@example.com"]
    deployers       = ["serviceAccount:builder@my-project.iam.gserviceaccount.com"]
  }

  assert {
    condition = alltrue([
      for m in concat(
        [for g in google_cloud_run_v2_service_iam_member.invokers : g.member],
        [for g in google_cloud_run_v2_service_iam_member.deployers : g.member],
        [for g in google_service_account_iam_member.deployers_act_as_runtime : g.member],
        [for g in google_storage_bucket_iam_member.script_writers : g.member],
        [for g in google_storage_bucket_iam_member.runtime_reads_scripts : g.member],
      ) : !contains(["allUsers", "allAuthenticatedUsers"], m)
    ])
    error_message = "No grant of the module may go to allUsers or allAuthenticatedUsers."
  }
}
