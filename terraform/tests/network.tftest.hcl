# Egress denied at the network layer: a network without default routes, one
# route to private.googleapis.com, a firewall that allows it on 443 and denies
# the rest, and private DNS that sends *.googleapis.com there (see
# service.tftest.hcl for how these tests run, and for the service's own
# vpc_access).

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

run "network_without_default_routes" {
  command = plan

  assert {
    condition     = google_compute_network.egress.auto_create_subnetworks == false
    error_message = "The egress network must not create subnets of its own."
  }
  assert {
    condition     = google_compute_network.egress.delete_default_routes_on_create == true
    error_message = "The egress network must delete its default routes: no path to the internet."
  }
}

run "subnet_with_private_google_access" {
  assert {
    condition     = google_compute_subnetwork.egress.private_ip_google_access == true
    error_message = "The subnet must have Private Google Access."
  }
  assert {
    condition     = google_compute_subnetwork.egress.network == google_compute_network.egress.id
    error_message = "The subnet must be in the egress network."
  }
  assert {
    condition     = google_compute_subnetwork.egress.ip_cidr_range == "10.8.0.0/24" && google_compute_subnetwork.egress.region == "europe-west1"
    error_message = "The subnet is 10.8.0.0/24 in the service's region by default."
  }
}

run "only_route_is_private_google_apis" {
  assert {
    condition     = google_compute_route.private_google_apis.dest_range == "199.36.153.8/30"
    error_message = "The network's only route must go to 199.36.153.8/30 (private.googleapis.com)."
  }
  assert {
    condition     = google_compute_route.private_google_apis.next_hop_gateway == "default-internet-gateway"
    error_message = "The route to private.googleapis.com goes through the default internet gateway (Private Google Access needs it)."
  }
  assert {
    condition     = google_compute_route.private_google_apis.network == google_compute_network.egress.name
    error_message = "The route must be in the egress network."
  }
}

run "firewall_allows_google_apis_on_443_only" {
  assert {
    condition     = google_compute_firewall.allow_private_google_apis.direction == "EGRESS" && google_compute_firewall.allow_private_google_apis.network == google_compute_network.egress.name
    error_message = "The allow rule is an egress rule of the egress network."
  }
  assert {
    condition     = google_compute_firewall.allow_private_google_apis.destination_ranges == toset(["199.36.153.8/30"])
    error_message = "Egress may be allowed only to 199.36.153.8/30."
  }
  assert {
    condition     = [for a in google_compute_firewall.allow_private_google_apis.allow : "${a.protocol}:${join(",", a.ports)}"] == ["tcp:443"]
    error_message = "Egress may be allowed only on TCP 443."
  }
  assert {
    condition     = google_compute_firewall.allow_private_google_apis.disabled != true
    error_message = "The allow rule must be enabled."
  }
}

run "firewall_denies_all_other_egress" {
  assert {
    condition     = google_compute_firewall.deny_all_egress.direction == "EGRESS" && google_compute_firewall.deny_all_egress.network == google_compute_network.egress.name
    error_message = "The deny rule is an egress rule of the egress network."
  }
  assert {
    condition     = google_compute_firewall.deny_all_egress.destination_ranges == toset(["0.0.0.0/0"]) && [for d in google_compute_firewall.deny_all_egress.deny : d.protocol] == ["all"] && length(google_compute_firewall.deny_all_egress.allow) == 0
    error_message = "The deny rule must deny every protocol to 0.0.0.0/0."
  }
  assert {
    condition     = google_compute_firewall.deny_all_egress.priority > google_compute_firewall.allow_private_google_apis.priority
    error_message = "The deny-all rule must rank below the allow rule (a larger number is a lower priority)."
  }
  assert {
    condition     = google_compute_firewall.deny_all_egress.target_tags == null && google_compute_firewall.deny_all_egress.target_service_accounts == null
    error_message = "The deny-all rule must apply to every instance of the network, not only to tagged ones."
  }
  assert {
    condition     = google_compute_firewall.deny_all_egress.disabled != true
    error_message = "The deny-all rule must be enabled."
  }
  assert {
    condition     = length(google_compute_firewall.deny_all_egress.log_config) == 1
    error_message = "The deny-all rule logs what it drops."
  }
}

run "private_dns_for_google_apis" {
  assert {
    condition     = google_dns_managed_zone.googleapis.dns_name == "googleapis.com." && google_dns_managed_zone.googleapis.visibility == "private"
    error_message = "googleapis.com. must be a private zone."
  }
  assert {
    condition     = [for n in google_dns_managed_zone.googleapis.private_visibility_config[0].networks : n.network_url] == [google_compute_network.egress.id]
    error_message = "The zone must be visible to the egress network."
  }
  assert {
    condition     = google_dns_record_set.googleapis_cname.managed_zone == google_dns_managed_zone.googleapis.name && google_dns_record_set.googleapis_cname.name == "*.googleapis.com." && google_dns_record_set.googleapis_cname.type == "CNAME" && google_dns_record_set.googleapis_cname.rrdatas == tolist(["private.googleapis.com."])
    error_message = "*.googleapis.com. must be a CNAME of private.googleapis.com. in the zone."
  }
  assert {
    condition     = google_dns_record_set.private_googleapis_a.managed_zone == google_dns_managed_zone.googleapis.name && google_dns_record_set.private_googleapis_a.name == "private.googleapis.com." && google_dns_record_set.private_googleapis_a.type == "A" && toset(google_dns_record_set.private_googleapis_a.rrdatas) == toset(["199.36.153.8", "199.36.153.9", "199.36.153.10", "199.36.153.11"])
    error_message = "private.googleapis.com. must resolve to 199.36.153.8-11 in the zone."
  }
}
