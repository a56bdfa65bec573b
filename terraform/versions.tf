terraform {
  # 1.5 for check-free preconditions and one(); the module uses nothing newer.
  required_version = ">= 1.5.0, < 2.0.0"

  required_providers {
    google = {
      source = "hashicorp/google"
      # 6.8.0 added invoker_iam_disabled to google_cloud_run_v2_service, which
      # the module sets to false explicitly; 7.x changed nothing it uses.
      version = ">= 6.8.0, < 8.0.0"
    }
  }
}
