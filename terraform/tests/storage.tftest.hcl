# The scripts bucket and its grants, and the credential-free mode, in which
# none of them exist (see service.tftest.hcl for how these tests run).

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

run "bucket_never_public" {
  command = plan

  assert {
    condition     = google_storage_bucket.scripts[0].public_access_prevention == "enforced"
    error_message = "The bucket's public access prevention must be enforced."
  }
  assert {
    condition     = google_storage_bucket.scripts[0].uniform_bucket_level_access == true
    error_message = "The bucket must use uniform bucket-level access: IAM alone, no object ACLs."
  }
}

run "bucket_keeps_scripts" {
  command = plan

  assert {
    condition     = google_storage_bucket.scripts[0].force_destroy == false
    error_message = "force_destroy must be false: terraform destroy never deletes scripts."
  }
  assert {
    condition     = google_storage_bucket.scripts[0].versioning[0].enabled == true
    error_message = "Versioning must be on."
  }
  assert {
    condition     = google_storage_bucket.scripts[0].soft_delete_policy[0].retention_duration_seconds == 7 * 86400
    error_message = "Soft delete must keep objects 7 days by default."
  }
  assert {
    condition = anytrue([
      for r in google_storage_bucket.scripts[0].lifecycle_rule :
      one(r.action).type == "Delete" && one(r.condition).days_since_noncurrent_time == 30
    ])
    error_message = "Noncurrent versions must be deleted after 30 days by default."
  }
}

run "bucket_name_and_location_by_default" {
  command = plan

  assert {
    condition     = google_storage_bucket.scripts[0].name == "my-project-sandbox-cloudrun-scripts" && output.bucket_name == "my-project-sandbox-cloudrun-scripts"
    error_message = "The bucket is PROJECT_ID-NAME-scripts by default."
  }
  assert {
    condition     = google_storage_bucket.scripts[0].location == "europe-west1"
    error_message = "The bucket is in the service's region by default."
  }
}

run "bucket_retention_from_variables" {
  command = plan

  variables {
    soft_delete_retention_days        = 30
    noncurrent_version_retention_days = 90
    bucket_name                       = "my-scripts"
    bucket_location                   = "EU"
  }

  assert {
    condition     = google_storage_bucket.scripts[0].soft_delete_policy[0].retention_duration_seconds == 30 * 86400
    error_message = "Soft delete must follow soft_delete_retention_days."
  }
  assert {
    condition     = one(google_storage_bucket.scripts[0].lifecycle_rule[0].condition).days_since_noncurrent_time == 90
    error_message = "The noncurrent-version rule must follow noncurrent_version_retention_days."
  }
  assert {
    condition     = google_storage_bucket.scripts[0].name == "my-scripts" && google_storage_bucket.scripts[0].location == "EU"
    error_message = "bucket_name and bucket_location must name and place the bucket."
  }
}

run "runtime_identity_reads_the_bucket_only" {
  assert {
    condition     = length(google_storage_bucket_iam_member.runtime_reads_scripts) == 1
    error_message = "The runtime service account must have exactly one grant."
  }
  assert {
    condition     = google_storage_bucket_iam_member.runtime_reads_scripts[0].role == "roles/storage.objectViewer"
    error_message = "The runtime service account's one grant must be roles/storage.objectViewer: read objects, nothing else."
  }
  assert {
    condition     = google_storage_bucket_iam_member.runtime_reads_scripts[0].bucket == google_storage_bucket.scripts[0].name
    error_message = "The runtime service account's grant must be on the scripts bucket."
  }
  assert {
    condition     = google_storage_bucket_iam_member.runtime_reads_scripts[0].member == "serviceAccount:${google_service_account.runtime.email}"
    error_message = "The read grant must go to the runtime service account."
  }
  assert {
    condition     = output.service_settings.env["STORE_URL"] == "gs://${google_storage_bucket.scripts[0].name}" && output.store_url == "gs://my-project-sandbox-cloudrun-scripts"
    error_message = "The service must read scripts from the bucket: STORE_URL=gs://BUCKET."
  }
}

run "script_writers_create_only" {
  command = plan

  variables {
    script_writers = ["user:you@example.com", "group:uploaders@example.com"]
  }

  assert {
    condition     = toset([for g in google_storage_bucket_iam_member.script_writers : g.member]) == toset(["user:you@example.com", "group:uploaders@example.com"])
    error_message = "Each of script_writers, and nobody else, gets an upload grant."
  }
  assert {
    condition     = alltrue([for g in google_storage_bucket_iam_member.script_writers : g.role == "roles/storage.objectCreator" && g.bucket == "my-project-sandbox-cloudrun-scripts"])
    error_message = "Uploaders get roles/storage.objectCreator on the scripts bucket: create, never overwrite or delete."
  }
}

run "credential_free_mode" {
  command = plan

  variables {
    scripts_bucket_enabled = false
    script_writers         = ["user:you@example.com"]
  }

  assert {
    condition     = length(google_storage_bucket.scripts) == 0
    error_message = "The credential-free mode has no bucket."
  }
  assert {
    condition     = length(google_storage_bucket_iam_member.runtime_reads_scripts) == 0
    error_message = "In the credential-free mode the runtime service account holds no grant."
  }
  assert {
    condition     = length(google_storage_bucket_iam_member.script_writers) == 0
    error_message = "In the credential-free mode there is no upload grant, whatever script_writers says."
  }
  assert {
    condition     = output.service_settings.env["STORE_URL"] == "none" && output.store_url == "none"
    error_message = "The credential-free mode runs with STORE_URL=none."
  }
  assert {
    condition     = output.bucket_name == null
    error_message = "bucket_name is null in the credential-free mode."
  }
}
