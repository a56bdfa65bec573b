# The scripts bucket: objects named sha256/<hex> of their own bytes, written
# once with a does-not-exist precondition and read by the service, which
# verifies every byte against the name. None of it exists in the credential-free
# mode (scripts_bucket_enabled = false).
resource "google_storage_bucket" "scripts" {
  count = var.scripts_bucket_enabled ? 1 : 0

  project  = var.project_id
  name     = local.bucket_name
  location = var.bucket_location != null ? var.bucket_location : var.region
  labels   = var.labels

  # IAM alone decides access: no object ACLs, and never public.
  uniform_bucket_level_access = true
  public_access_prevention    = "enforced"

  # A script deleted by mistake can be restored: from the noncurrent version
  # for noncurrent_version_retention_days, and after that from soft delete.
  versioning {
    enabled = true
  }

  soft_delete_policy {
    retention_duration_seconds = var.soft_delete_retention_days * 86400
  }

  lifecycle_rule {
    condition {
      days_since_noncurrent_time = var.noncurrent_version_retention_days
    }
    action {
      type = "Delete"
    }
  }

  # terraform destroy never deletes scripts: empty the bucket by hand first.
  force_destroy = false
}

# The runtime service account's one grant: read objects (get and list; the
# readiness check lists one name) in this bucket. Nothing else, anywhere.
resource "google_storage_bucket_iam_member" "runtime_reads_scripts" {
  count = var.scripts_bucket_enabled ? 1 : 0

  bucket = google_storage_bucket.scripts[0].name
  role   = "roles/storage.objectViewer"
  member = "serviceAccount:${google_service_account.runtime.email}"
}

# Uploaders create objects; without storage.objects.delete they can neither
# overwrite nor delete one, so a stored script never changes.
resource "google_storage_bucket_iam_member" "script_writers" {
  for_each = var.scripts_bucket_enabled ? toset(var.script_writers) : toset([])

  bucket = google_storage_bucket.scripts[0].name
  role   = "roles/storage.objectCreator"
  member = each.value
}
