# Inputs of the sandbox-cloudrun module. Every hardening property that is not
# a variable here is fixed in the resources on purpose (README.md says why), and
# deploy/ tests that it stays so.

variable "project_id" {
  type        = string
  nullable    = false
  description = "Project that holds every resource of the module."

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{4,28}[a-z0-9]$", var.project_id))
    error_message = "project_id must be a Google Cloud project ID: 6 to 30 lowercase letters, digits or hyphens, starting with a letter."
  }
}

variable "region" {
  type        = string
  nullable    = false
  description = "Region of the Cloud Run service, its subnet and (unless bucket_location says otherwise) the scripts bucket, such as europe-west1. It must offer Direct VPC egress, which carries all of the service's traffic out (docs/deploy.md, \"Networking: Direct VPC egress and an existing network\")."

  validation {
    condition     = can(regex("^[a-z]+-[a-z]+[0-9]+$", var.region))
    error_message = "region must be a Google Cloud region name such as europe-west1."
  }
}

variable "name" {
  type        = string
  nullable    = false
  default     = "sandbox-cloudrun"
  description = "Name of the Cloud Run service and prefix of every other resource's name (4 to 20 characters, so that derived names stay within their limits)."

  validation {
    condition     = can(regex("^[a-z][-a-z0-9]{2,18}[a-z0-9]$", var.name))
    error_message = "name must be 4 to 20 lowercase letters, digits or hyphens, starting with a letter and not ending with a hyphen."
  }
}

variable "image" {
  type        = string
  nullable    = false
  description = "Container image the service is created with, pinned by tag or digest (the image cloudbuild.yaml pushes). Terraform sets it only when it creates the service: after that Cloud Build rolls images and Terraform ignores the field (see lifecycle.ignore_changes)."

  validation {
    condition     = can(regex("^[a-z0-9][-a-z0-9.:]*(/[-a-z0-9._]+)+(:[A-Za-z0-9_][-A-Za-z0-9_.]{0,127}|@sha256:[0-9a-f]{64})$", var.image)) && !endswith(var.image, ":latest")
    error_message = "image must be the full reference of the image cloudbuild.yaml pushed, HOST/PROJECT/REPOSITORY/NAME:TAG or HOST/PROJECT/REPOSITORY/NAME@sha256:DIGEST, lowercase but for the tag, and not the tag latest: the IMAGE that docs/deploy.md step 3 prints, $REGISTRY/$PROJECT/$REPOSITORY/$SERVICE:$COMMIT."
  }
}

variable "invoker_members" {
  type        = list(string)
  nullable    = false
  description = "The only identities granted roles/run.invoker on the service, as IAM members such as serviceAccount:loom@my-project.iam.gserviceaccount.com or group:sandbox-callers@example.com: the callers, and the service account Cloud Build runs as, whose conformance kit checks each new revision before it takes traffic (docs/deploy.md, \"Rolling out\"). At least one; allUsers and allAuthenticatedUsers are refused."

  validation {
    condition     = length(var.invoker_members) > 0
    error_message = "invoker_members must name at least one caller: an invoker list that is empty leaves a service nobody may call, and is usually a mistake in a module variable."
  }

  validation {
    condition     = alltrue([for m in var.invoker_members : !contains(["allUsers", "allAuthenticatedUsers"], m)])
    error_message = "invoker_members must not contain allUsers or allAuthenticatedUsers: the sandbox is never public."
  }

  validation {
    condition     = alltrue([for m in var.invoker_members : can(regex("^(user|serviceAccount|group|domain|principal|principalSet):[^\\s]+$", m))])
    error_message = "Each of invoker_members must be an IAM member with a type prefix: user:, serviceAccount:, group:, domain:, principal: or principalSet:."
  }
}

variable "ingress" {
  type        = string
  nullable    = false
  default     = "INGRESS_TRAFFIC_INTERNAL_LOAD_BALANCER"
  description = "Where requests may come from: INGRESS_TRAFFIC_INTERNAL_LOAD_BALANCER (the default: VPC networks of the project and internal or external Application Load Balancers), INGRESS_TRAFFIC_INTERNAL_ONLY, or INGRESS_TRAFFIC_ALL (IAM still checks every request). The build that rolls images out calls the new revision from where it runs, to run the conformance kit: this must let it (docs/deploy.md, \"What only a real project shows\")."

  validation {
    condition     = contains(["INGRESS_TRAFFIC_INTERNAL_LOAD_BALANCER", "INGRESS_TRAFFIC_INTERNAL_ONLY", "INGRESS_TRAFFIC_ALL"], var.ingress)
    error_message = "ingress must be INGRESS_TRAFFIC_INTERNAL_LOAD_BALANCER, INGRESS_TRAFFIC_INTERNAL_ONLY or INGRESS_TRAFFIC_ALL."
  }
}

variable "request_timeout" {
  type        = string
  nullable    = false
  default     = "60s"
  description = "Cloud Run request timeout, in whole seconds such as 60s (1s to 3600s). The same value is passed to the container as REQUEST_TIMEOUT, so that the process's own hard kill (which fires before REQUEST_TIMEOUT) ends a stuck evaluation before the platform does."

  validation {
    condition     = can(regex("^[1-9][0-9]*s$", var.request_timeout)) && try(tonumber(trimsuffix(var.request_timeout, "s")) <= 3600, false)
    error_message = "request_timeout must be a duration in whole seconds, such as 60s, from 1s to 3600s."
  }
}

variable "max_wall_clock" {
  type        = string
  nullable    = false
  default     = "30s"
  description = "Largest wall-clock limit a request may ask for (MAX_WALL_CLOCK), in whole seconds such as 30s. request_timeout must exceed it by more than twice HARD_KILL_GRACE plus a second (2s with the service's default grace of 500ms): the service refuses to start otherwise."

  validation {
    condition     = can(regex("^[1-9][0-9]*s$", var.max_wall_clock)) && try(tonumber(trimsuffix(var.max_wall_clock, "s")) <= 3600, false)
    error_message = "max_wall_clock must be a duration in whole seconds, such as 30s, from 1s to 3600s."
  }
}

variable "cpu" {
  type        = string
  nullable    = false
  default     = "1"
  description = "CPU limit of the container, in whole CPUs (1, 2, 4, 6 or 8). The second-generation execution environment needs at least 1; one is enough for one evaluation at a time (docs/cost.md, \"How many instances\")."

  validation {
    condition     = contains(["1", "2", "4", "6", "8"], var.cpu)
    error_message = "cpu must be 1, 2, 4, 6 or 8."
  }
}

variable "memory" {
  type        = string
  nullable    = false
  default     = "1Gi"
  description = "Memory limit of the container as a Kubernetes-style size in Mi or Gi, such as 1Gi, from 512Mi to 32Gi. It must hold the largest evaluation (MAX_MEMORY_BYTES, 256 MiB by default), the warm pool and the Go process (docs/cost.md, \"How many instances\")."

  validation {
    condition = can(regex("^[1-9][0-9]*(Mi|Gi)$", var.memory)) && try(
      (endswith(var.memory, "Gi") ? tonumber(trimsuffix(var.memory, "Gi")) * 1024 : tonumber(trimsuffix(var.memory, "Mi"))) >= 512 &&
      (endswith(var.memory, "Gi") ? tonumber(trimsuffix(var.memory, "Gi")) * 1024 : tonumber(trimsuffix(var.memory, "Mi"))) <= 32768,
      false
    )
    error_message = "memory must be a size in Mi or Gi, such as 1Gi, from 512Mi to 32Gi."
  }
}

variable "cpu_always_allocated" {
  type        = bool
  nullable    = false
  default     = false
  description = "Keep CPU allocated between requests (instance-based billing). Off by default: an instance runs one evaluation at a time and needs no background CPU. On is cheaper for a steady load that keeps instances busy (docs/cost.md, \"Price per million evaluations\")."
}

variable "min_instances" {
  type        = number
  nullable    = false
  default     = 0
  description = "Minimum number of instances kept warm (0 scales to zero; 1 or more removes cold starts at a cost: docs/cost.md, \"Price per million evaluations\")."

  validation {
    condition     = var.min_instances >= 0 && floor(var.min_instances) == var.min_instances
    error_message = "min_instances must be a whole number, 0 or more."
  }
}

variable "max_instances" {
  type        = number
  nullable    = false
  default     = 10
  description = "Maximum number of instances. With one request per instance this is also the largest number of evaluations running at once; further requests queue briefly at Cloud Run and then fail with 429 (docs/cost.md, \"How many instances\")."

  validation {
    condition     = var.max_instances >= 1 && floor(var.max_instances) == var.max_instances
    error_message = "max_instances must be a whole number, 1 or more."
  }
}

variable "deletion_protection" {
  type        = bool
  nullable    = false
  default     = true
  description = "Refuse to destroy or replace the Cloud Run service. Set false, apply, then destroy, to remove the service on purpose."
}

variable "scripts_bucket_enabled" {
  type        = bool
  nullable    = false
  default     = true
  description = "Create the scripts bucket and grant the runtime service account read access to it (STORE_URL=gs://BUCKET). false is the credential-free mode: no bucket, no grant of any kind to the runtime service account, STORE_URL=none, and callers send scripts by value to POST /v1/sandbox/evaluate (docs/spi.md, \"A remote backend's checklist\": no service account or credentials)."
}

variable "bucket_name" {
  type        = string
  default     = null
  description = "Name of the scripts bucket. Default: PROJECT_ID-NAME-scripts."

  validation {
    condition     = var.bucket_name == null || can(regex("^[a-z0-9][-_a-z0-9]{1,61}[a-z0-9]$", var.bucket_name))
    error_message = "bucket_name must be 3 to 63 lowercase letters, digits, hyphens or underscores, starting and ending with a letter or digit."
  }
}

variable "bucket_location" {
  type        = string
  default     = null
  description = "Location of the scripts bucket (a region, dual-region or multi-region). Default: the service's region."
}

variable "soft_delete_retention_days" {
  type        = number
  nullable    = false
  default     = 7
  description = "Days a deleted or overwritten script object stays restorable (the bucket's soft-delete policy), 7 to 90."

  validation {
    condition     = var.soft_delete_retention_days >= 7 && var.soft_delete_retention_days <= 90 && floor(var.soft_delete_retention_days) == var.soft_delete_retention_days
    error_message = "soft_delete_retention_days must be a whole number of days from 7 to 90: soft delete stays on."
  }
}

variable "noncurrent_version_retention_days" {
  type        = number
  nullable    = false
  default     = 30
  description = "Days a noncurrent object version is kept before it is deleted. Objects are content-addressed and written with a does-not-exist precondition, so noncurrent versions only appear when someone deletes a script."

  validation {
    condition     = var.noncurrent_version_retention_days >= 1 && floor(var.noncurrent_version_retention_days) == var.noncurrent_version_retention_days
    error_message = "noncurrent_version_retention_days must be a whole number, 1 or more."
  }
}

variable "script_writers" {
  type        = list(string)
  nullable    = false
  default     = []
  description = "IAM members that may upload scripts: roles/storage.objectCreator on the bucket, which creates objects and can neither overwrite nor delete them. Not the runtime service account."

  validation {
    condition     = alltrue([for m in var.script_writers : can(regex("^(user|serviceAccount|group|domain|principal|principalSet):[^\\s]+$", m))])
    error_message = "Each of script_writers must be an IAM member with a type prefix (user:, serviceAccount:, group:, domain:, principal: or principalSet:); allUsers and allAuthenticatedUsers are refused."
  }
}

variable "deployers" {
  type        = list(string)
  nullable    = false
  default     = []
  description = "IAM members that roll new images, such as the service account Cloud Build runs as: roles/run.developer on this service, to deploy a revision with no traffic under a tag and route the traffic to it once checked (docs/deploy.md, \"Rolling out\"), and roles/iam.serviceAccountUser on its runtime service account (to deploy revisions that run as it); with bulk_job.enabled, roles/run.developer on the bulk job as well, to move it to each image rolled out. Neither role can change who may invoke the service."

  validation {
    condition     = alltrue([for m in var.deployers : can(regex("^(user|serviceAccount|group|principal|principalSet):[^\\s]+$", m))])
    error_message = "Each of deployers must be an IAM member with a type prefix (user:, serviceAccount:, group:, principal: or principalSet:)."
  }
}

variable "subnet_cidr" {
  type        = string
  nullable    = false
  default     = "10.8.0.0/24"
  description = "Primary IPv4 range of the subnet that carries the service's direct VPC egress, in a network of the module's own, connected to no other (docs/deploy.md, \"Networking: Direct VPC egress and an existing network\"). Direct VPC egress uses about two addresses per instance: a /24 serves up to about 100 instances; /26 is the smallest Cloud Run accepts."

  validation {
    condition     = can(regex("^([0-9]{1,3}\\.){3}[0-9]{1,3}/(1[6-9]|2[0-6])$", var.subnet_cidr))
    error_message = "subnet_cidr must be an IPv4 CIDR range from /16 to /26, such as 10.8.0.0/24."
  }
}

variable "log_level" {
  type        = string
  nullable    = false
  default     = "info"
  description = "LOG_LEVEL of the service: debug, info, warn or error."

  validation {
    condition     = contains(["debug", "info", "warn", "error"], var.log_level)
    error_message = "log_level must be debug, info, warn or error."
  }
}

variable "auth_audience" {
  type        = string
  nullable    = false
  default     = ""
  description = "Turn on the service's own ID-token check (defence in depth behind Cloud Run IAM): the audience the token must carry, usually the service URL. The allowed callers are then the user: and serviceAccount: emails of invoker_members. Empty (the default) leaves it off. When set, cloudbuild.yaml's _KIT_AUDIENCE must be the same value, or the conformance kit of each rollout is refused (docs/deploy.md, \"Rolling out\")."
}

variable "otel_exporter" {
  type        = string
  nullable    = false
  default     = "none"
  description = "OTEL_EXPORTER of the service: none or stdout (spans and metrics as log lines). otlp is refused here: egress is closed to everything but Google APIs, and exporting to Cloud Trace or Monitoring would need grants the runtime service account must not have."

  validation {
    condition     = contains(["none", "stdout"], var.otel_exporter)
    error_message = "otel_exporter must be none or stdout."
  }
}

variable "env" {
  type        = map(string)
  nullable    = false
  default     = {}
  description = "Further environment variables of the service, such as MAX_MEMORY_BYTES, POOL_SIZE, HARD_KILL_GRACE or WORKER_LOCKDOWN (README.md lists them; docs/deploy.md, \"WORKER_LOCKDOWN=best-effort\", says what best-effort gives up). The variables the module sets for hardening cannot be overridden here, and HARD_KILL_GRACE and DEFAULT_WALL_CLOCK must keep the service's start-up rules: request_timeout above max_wall_clock plus twice HARD_KILL_GRACE plus a second, DEFAULT_WALL_CLOCK at most max_wall_clock."

  validation {
    condition = alltrue([for k in keys(var.env) : !contains([
      "PORT", "STORE_URL", "REQUEST_TIMEOUT", "MAX_WALL_CLOCK", "MAX_CONCURRENT_EVALUATIONS", "PROCESS_KILL",
      "COMPILATION_CACHE_DIR", "AUTH_AUDIENCE", "AUTH_ALLOWED_CALLERS", "OTEL_EXPORTER", "LOG_LEVEL",
    ], k)])
    error_message = "env must not set PORT, STORE_URL, REQUEST_TIMEOUT, MAX_WALL_CLOCK, MAX_CONCURRENT_EVALUATIONS, PROCESS_KILL, COMPILATION_CACHE_DIR, AUTH_AUDIENCE, AUTH_ALLOWED_CALLERS, OTEL_EXPORTER or LOG_LEVEL: the module sets them."
  }

  # The start-up rules on these two (service.tf's preconditions) need their
  # values: they must be durations the service and the module both read.
  validation {
    condition = alltrue([for k in ["HARD_KILL_GRACE", "DEFAULT_WALL_CLOCK"] :
      !contains(keys(var.env), k) || can(regex("^(([0-9]+(\\.[0-9]+)?|\\.[0-9]+)(ns|us|µs|μs|ms|h|m|s))+$", var.env[k]))
    ])
    error_message = "env HARD_KILL_GRACE and DEFAULT_WALL_CLOCK, when set, must be Go durations such as 500ms, 2s or 1m30s: numbers, each followed by a unit (ns, us, ms, s, m or h)."
  }
}

variable "labels" {
  type        = map(string)
  nullable    = false
  default     = {}
  description = "Labels added to the Cloud Run service and the scripts bucket."
}

variable "monitoring_enabled" {
  type        = bool
  nullable    = false
  default     = true
  description = "Create the service's Cloud Monitoring: log-based metrics of hard kills, evaluations and revisions that fail to start, alert policies for hard kills, start-up failures, the 5xx ratio, the 429 ratio and the p99 latency, and a dashboard (monitoring.tf; docs/deploy.md, \"Monitoring\"). false creates none of them."
}

variable "notification_channels" {
  type        = list(string)
  nullable    = false
  default     = []
  description = "Notification channels of the alert policies, as channel IDs (the number at the end of the name) or full names projects/PROJECT/notificationChannels/ID, such as a google_monitoring_notification_channel's id. Empty: the policies still open incidents, shown in the console, and notify nobody."

  validation {
    condition     = alltrue([for c in var.notification_channels : can(regex("^([0-9]+|projects/[^/]+/notificationChannels/[0-9]+)$", c))])
    error_message = "Each of notification_channels must be a channel ID (digits) or a full name projects/PROJECT/notificationChannels/ID."
  }
}

variable "alert_5xx_ratio" {
  type        = number
  nullable    = false
  default     = 0.05
  description = "Alert when more than this fraction of the service's requests (0 to 1) over 5 minutes is answered with a 5xx status."

  validation {
    condition     = var.alert_5xx_ratio > 0 && var.alert_5xx_ratio < 1
    error_message = "alert_5xx_ratio must be a fraction between 0 and 1, such as 0.05."
  }
}

variable "alert_429_ratio" {
  type        = number
  nullable    = false
  default     = 0.05
  description = "Alert when more than this fraction of the service's requests (0 to 1) over 5 minutes is refused with 429: every instance was busy (max_instances) or the service refused a second evaluation. A lasting 429 ratio asks for a larger max_instances or fewer callers."

  validation {
    condition     = var.alert_429_ratio > 0 && var.alert_429_ratio < 1
    error_message = "alert_429_ratio must be a fraction between 0 and 1, such as 0.05."
  }
}

variable "alert_p99_latency_ms" {
  type        = number
  default     = null
  description = "Alert when the 99th percentile of the service's request latency over 5 minutes exceeds this many milliseconds; below request_timeout, which no request outlasts. Default (null): 10000, or half of request_timeout when that is less. A request takes at least its script's run, up to the wall clock it asks for (5s by default, max_wall_clock at most)."

  validation {
    condition     = var.alert_p99_latency_ms == null || try(var.alert_p99_latency_ms > 0, false)
    error_message = "alert_p99_latency_ms must be a positive number of milliseconds, such as 10000, or null for the default."
  }
}

variable "bulk_job" {
  type = object({
    enabled        = optional(bool, false)
    bucket         = optional(string)
    inputs_prefix  = optional(string, "bulk/inputs/")
    results_prefix = optional(string, "bulk/results/")
    task_count     = optional(number, 1)
    parallelism    = optional(number, 10)
    task_timeout   = optional(string, "3600s")
    max_retries    = optional(number, 3)
    cpu            = optional(string)
    memory         = optional(string)
  })
  nullable    = false
  default     = {}
  description = "The opt-in Cloud Run job for bulk runs (bulkjob.tf; README.md, \"Bulk runs\"): the service's image, environment, identity and network, running `sandbox-cloudrun bulk` over NDJSON inputs in a bucket. enabled (default false: no job and no grant). bucket: an existing bucket with uniform bucket-level access, which the module does not create or manage; the runtime service account may read objects under inputs_prefix and create, replace and delete objects under results_prefix (both folder prefixes ending in /, such as bulk/inputs/, neither inside the other), and nothing else of it. task_count: the tasks (shards) of an execution unless gcloud run jobs execute --tasks says otherwise, 1 to 10000. parallelism: tasks running at once, 1 to 100; each takes about two addresses of the egress subnet (subnet_cidr) besides the service's instances. task_timeout: a task's timeout in whole seconds, 1s to 86400s. max_retries: retries of a failed task, 0 to 10. cpu and memory: a task's limits, as the service's cpu and memory accept them; null (the default) takes the service's."

  validation {
    condition     = !var.bulk_job.enabled || (var.bulk_job.bucket != null && can(regex("^[a-z0-9][-_.a-z0-9]{1,220}[a-z0-9]$", coalesce(var.bulk_job.bucket, "-"))))
    error_message = "bulk_job.bucket must name the existing bucket of the bulk inputs and results (lowercase letters, digits, hyphens, underscores or dots, starting and ending with a letter or digit) when bulk_job.enabled is true."
  }

  validation {
    condition = alltrue([
      for p in [var.bulk_job.inputs_prefix, var.bulk_job.results_prefix] : can(regex("^([-_.A-Za-z0-9]+/)+$", p)) && !contains(split("/", p), ".") && !contains(split("/", p), "..")
    ])
    error_message = "bulk_job.inputs_prefix and bulk_job.results_prefix must be folder prefixes of object names, such as bulk/inputs/: one or more names of letters, digits, hyphens, underscores or dots (not . or ..), each followed by /, with no leading /. The runtime service account's grants stop at these prefixes."
  }

  validation {
    condition     = !startswith(coalesce(var.bulk_job.inputs_prefix, "-"), coalesce(var.bulk_job.results_prefix, "-")) && !startswith(coalesce(var.bulk_job.results_prefix, "-"), coalesce(var.bulk_job.inputs_prefix, "-"))
    error_message = "bulk_job.inputs_prefix and bulk_job.results_prefix must not be equal or one inside the other: the job may replace and delete what is under results_prefix, and must not read its own results as inputs."
  }

  validation {
    condition     = var.bulk_job.task_count >= 1 && var.bulk_job.task_count <= 10000 && floor(var.bulk_job.task_count) == var.bulk_job.task_count
    error_message = "bulk_job.task_count must be a whole number from 1 to 10000 (Cloud Run's limit of tasks per execution)."
  }

  validation {
    condition     = var.bulk_job.parallelism >= 1 && var.bulk_job.parallelism <= 100 && floor(var.bulk_job.parallelism) == var.bulk_job.parallelism
    error_message = "bulk_job.parallelism must be a whole number from 1 to 100: each running task takes addresses of the egress subnet the service's instances also use."
  }

  validation {
    condition     = can(regex("^[1-9][0-9]*s$", var.bulk_job.task_timeout)) && try(tonumber(trimsuffix(var.bulk_job.task_timeout, "s")) <= 86400, false)
    error_message = "bulk_job.task_timeout must be a duration in whole seconds, such as 3600s, from 1s to 86400s."
  }

  validation {
    condition     = var.bulk_job.max_retries >= 0 && var.bulk_job.max_retries <= 10 && floor(var.bulk_job.max_retries) == var.bulk_job.max_retries
    error_message = "bulk_job.max_retries must be a whole number from 0 to 10."
  }

  validation {
    condition     = var.bulk_job.cpu == null || contains(["1", "2", "4", "6", "8"], coalesce(var.bulk_job.cpu, "-"))
    error_message = "bulk_job.cpu must be 1, 2, 4, 6 or 8, or null for the service's cpu."
  }

  validation {
    condition = var.bulk_job.memory == null || (can(regex("^[1-9][0-9]*(Mi|Gi)$", coalesce(var.bulk_job.memory, "-"))) && try(
      (endswith(var.bulk_job.memory, "Gi") ? tonumber(trimsuffix(var.bulk_job.memory, "Gi")) * 1024 : tonumber(trimsuffix(var.bulk_job.memory, "Mi"))) >= 512 &&
      (endswith(var.bulk_job.memory, "Gi") ? tonumber(trimsuffix(var.bulk_job.memory, "Gi")) * 1024 : tonumber(trimsuffix(var.bulk_job.memory, "Mi"))) <= 32768,
      false
    ))
    error_message = "bulk_job.memory must be a size in Mi or Gi, such as 2Gi, from 512Mi to 32Gi, or null for the service's memory."
  }
}
