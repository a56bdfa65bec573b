package deploy

// The hardening checks of the Terraform module (terraform/), as issue #6 lists
// them. Each finding has a stable id, which the weakened-copy tests expect.

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

type finding struct {
	id    string
	where string
	msg   string
}

func (f finding) String() string { return fmt.Sprintf("[%s] %s: %s", f.id, f.where, f.msg) }

type findings []finding

func (fs *findings) add(id, where, format string, args ...any) {
	*fs = append(*fs, finding{id: id, where: where, msg: fmt.Sprintf(format, args...)})
}

func (fs findings) has(id string) bool {
	return slices.ContainsFunc(fs, func(f finding) bool { return f.id == id })
}

func (fs findings) String() string {
	var b strings.Builder
	for _, f := range fs {
		b.WriteString("\n  " + f.String())
	}
	return b.String()
}

const (
	privateGoogleAPIsRange = "199.36.153.8/30"
	serviceType            = "google_cloud_run_v2_service"
	bucketType             = "google_storage_bucket"
	serviceAccountType     = "google_service_account"
)

var (
	privateGoogleAPIsIPs = []string{"199.36.153.8", "199.36.153.9", "199.36.153.10", "199.36.153.11"}
	publicMembers        = []string{"allUsers", "allAuthenticatedUsers"}
	// The runtime account's one allowed grant: read objects.
	readOnlyObjectRoles = []string{"roles/storage.objectViewer", "roles/storage.legacyObjectReader"}
)

// checkModule runs every check on the module in terraform/.
func checkModule(m *tfModule) findings {
	var fs findings
	svc := checkService(m, &fs)
	credVar := checkBucket(m, &fs)
	checkIAM(m, svc, credVar, &fs)
	checkCredentialFree(m, svc, credVar, &fs)
	checkNetwork(m, svc, &fs)
	checkVersions(m, &fs)
	checkInterface(m, &fs)
	return fs
}

// --- the Cloud Run service ---------------------------------------------------

func checkService(m *tfModule, fs *findings) *tfBlock {
	svcs := m.resourcesOf(serviceType)
	if len(svcs) != 1 {
		fs.add("service.count", m.dir, "want exactly one %s, found %d", serviceType, len(svcs))
		return nil
	}
	svc := svcs[0]
	w := svc.where()
	body := svc.body()
	tmpl := sub(body, "template")
	if tmpl == nil {
		fs.add("service.template", w, "no template block")
		return svc
	}

	// One request per instance.
	if a := attr(tmpl, "max_instance_request_concurrency"); a == nil {
		fs.add("service.concurrency", w, "template.max_instance_request_concurrency is not set (Cloud Run's default is 80): want the literal 1")
	} else if v, ok := constant(a.Expr); !ok || v.Type() != cty.Number || !v.RawEquals(cty.NumberIntVal(1)) {
		fs.add("service.concurrency", w, "template.max_instance_request_concurrency must be the literal 1, not %s", exprText(m, svc, a.Expr))
	}

	// The request timeout, from a variable, passed to the container.
	checkTimeout(m, svc, tmpl, fs)

	if v, _ := constString(tmpl, "execution_environment"); v != "EXECUTION_ENVIRONMENT_GEN2" {
		fs.add("service.gen2", w, "template.execution_environment must be the literal EXECUTION_ENVIRONMENT_GEN2")
	}

	// Egress: all traffic through a subnet of the module's network.
	vpc := sub(tmpl, "vpc_access")
	switch {
	case vpc == nil:
		fs.add("service.egress", w, "no template.vpc_access: egress would go straight to the internet")
	default:
		if v, _ := constString(vpc, "egress"); v != "ALL_TRAFFIC" {
			fs.add("service.egress", w, "template.vpc_access.egress must be the literal ALL_TRAFFIC (PRIVATE_RANGES_ONLY sends public traffic around the firewall)")
		}
		if attr(vpc, "connector") != nil {
			fs.add("service.egress", w, "template.vpc_access uses a connector: want direct VPC egress (network_interfaces)")
		}
		ni := sub(vpc, "network_interfaces")
		if a := attr(ni, "subnetwork"); a == nil || !refersTo(a.Expr, "google_compute_subnetwork", "") {
			fs.add("service.egress", w, "template.vpc_access.network_interfaces.subnetwork must be a google_compute_subnetwork of the module")
		}
	}

	// Ingress: internal and load balancer unless the operator says otherwise.
	if a := attr(body, "ingress"); a == nil {
		fs.add("service.ingress", w, "ingress is not set (the API's default is INGRESS_TRAFFIC_ALL)")
	} else if v, err := m.eval(a.Expr, nil); err != nil || v.Type() != cty.String || !v.IsKnown() || v.AsString() != "INGRESS_TRAFFIC_INTERNAL_LOAD_BALANCER" {
		fs.add("service.ingress", w, "ingress must default to INGRESS_TRAFFIC_INTERNAL_LOAD_BALANCER, got %s", valueText(v, err))
	}

	// Invoker IAM is never turned off.
	if a := attr(body, "invoker_iam_disabled"); a == nil {
		fs.add("service.invoker_iam", w, "invoker_iam_disabled must be set to the literal false, so that a reader sees it")
	} else if v, ok := constant(a.Expr); !ok || !v.RawEquals(cty.False) {
		fs.add("service.invoker_iam", w, "invoker_iam_disabled must be the literal false")
	}

	// A dedicated identity created by the module.
	if a := attr(tmpl, "service_account"); a == nil {
		fs.add("service.identity", w, "template.service_account is not set: the revision would run as the Compute Engine default service account")
	} else if names := referredNames(a.Expr, serviceAccountType); len(names) != 1 || m.resource(serviceAccountType, names[0]) == nil {
		fs.add("service.identity", w, "template.service_account must be a google_service_account of the module")
	}

	if d := attr(body, "deletion_protection"); d == nil || len(varsOf(d.Expr)) == 0 {
		fs.add("service.deletion_protection", w, "deletion_protection must be set from a variable")
	}

	sc := sub(tmpl, "scaling")
	if attr(sc, "min_instance_count") == nil || attr(sc, "max_instance_count") == nil {
		fs.add("service.scaling", w, "template.scaling must set min_instance_count and max_instance_count")
	}

	ctr := sub(tmpl, "containers")
	if ctr == nil {
		fs.add("service.container", w, "no template.containers block")
		return svc
	}
	res := sub(ctr, "resources")
	if lim := attr(res, "limits"); lim == nil {
		fs.add("service.limits", w, "containers.resources.limits is not set: want cpu and memory from variables")
	} else if obj, ok := lim.Expr.(*hclsyntax.ObjectConsExpr); !ok {
		fs.add("service.limits", w, "containers.resources.limits must be an object of cpu and memory")
	} else {
		got := map[string]bool{}
		for _, it := range obj.Items {
			k, ok := constant(it.KeyExpr.(hclsyntax.Expression))
			if ok && k.Type() == cty.String && len(varsOf(it.ValueExpr)) > 0 {
				got[k.AsString()] = true
			}
		}
		if !got["cpu"] || !got["memory"] {
			fs.add("service.limits", w, "containers.resources.limits must set cpu and memory from variables")
		}
	}
	if a := attr(res, "startup_cpu_boost"); a == nil {
		fs.add("service.cpu_boost", w, "containers.resources.startup_cpu_boost is not set")
	} else if v, ok := constant(a.Expr); !ok || !v.RawEquals(cty.True) {
		fs.add("service.cpu_boost", w, "containers.resources.startup_cpu_boost must be the literal true")
	}
	if p, _ := constString(sub(ctr, "startup_probe", "http_get"), "path"); p != "/readyz" {
		fs.add("service.probes", w, "containers.startup_probe must be an HTTP GET of /readyz")
	}
	if p, _ := constString(sub(ctr, "liveness_probe", "http_get"), "path"); p != "/healthz" {
		fs.add("service.probes", w, "containers.liveness_probe must be an HTTP GET of /healthz")
	}
	if a := envOf(ctr, "MAX_CONCURRENT_EVALUATIONS"); a == nil {
		fs.add("service.app_concurrency", w, "the container's environment must set MAX_CONCURRENT_EVALUATIONS")
	} else if v, ok := constant(a.Expr); !ok || v.Type() != cty.String || v.AsString() != "1" {
		fs.add("service.app_concurrency", w, `MAX_CONCURRENT_EVALUATIONS must be the literal "1"`)
	}

	// Cloud Build rolls images: Terraform ignores them.
	if !ignoresImage(sub(body, "lifecycle")) {
		fs.add("service.ignore_image", w, "lifecycle.ignore_changes must list template[0].containers[0].image, or terraform apply and Cloud Build revert each other")
	}
	return svc
}

// checkTimeout: template.timeout comes from a variable, and the container's
// REQUEST_TIMEOUT follows the same variable (tried with two values).
func checkTimeout(m *tfModule, svc *tfBlock, tmpl *hclsyntax.Body, fs *findings) {
	w := svc.where()
	t := attr(tmpl, "timeout")
	if t == nil {
		fs.add("service.timeout", w, "template.timeout is not set: want it from a variable")
		return
	}
	vars := varsOf(t.Expr)
	if len(vars) != 1 {
		fs.add("service.timeout", w, "template.timeout must come from one variable, got %s", exprText(m, svc, t.Expr))
		return
	}
	env := envOf(sub(tmpl, "containers"), "REQUEST_TIMEOUT")
	if env == nil {
		fs.add("service.timeout_env", w, "the container's environment must set REQUEST_TIMEOUT from the same variable as template.timeout")
		return
	}
	for _, probe := range []map[string]cty.Value{nil, {vars[0]: cty.StringVal("123s")}} {
		tv, err1 := m.eval(t.Expr, probe)
		ev, err2 := m.eval(env.Expr, probe)
		if err1 != nil || err2 != nil || !tv.IsWhollyKnown() || !ev.IsWhollyKnown() || !tv.RawEquals(ev) {
			fs.add("service.timeout_env", w, "REQUEST_TIMEOUT (%s) must equal template.timeout (%s) for every value of var.%s", valueText(ev, err2), valueText(tv, err1), vars[0])
			return
		}
		if probe != nil && !tv.RawEquals(cty.StringVal("123s")) {
			fs.add("service.timeout", w, "template.timeout does not follow var.%s", vars[0])
		}
	}
}

// envOf returns the value attribute of the static env block named name.
func envOf(ctr *hclsyntax.Body, name string) *hclsyntax.Attribute {
	for _, e := range blocksOf(ctr, "env") {
		if n, _ := constString(e.Body, "name"); n == name {
			return attr(e.Body, "value")
		}
	}
	return nil
}

func ignoresImage(lc *hclsyntax.Body) bool {
	a := attr(lc, "ignore_changes")
	if a == nil {
		return false
	}
	tup, ok := a.Expr.(*hclsyntax.TupleConsExpr)
	if !ok {
		return false
	}
	for _, e := range tup.Exprs {
		t, diags := hcl.RelTraversalForExpr(e)
		if diags.HasErrors() {
			continue
		}
		if traversalString(t) == "template[0].containers[0].image" {
			return true
		}
	}
	return false
}

// --- the scripts bucket -------------------------------------------------------

// checkBucket checks the bucket's properties and returns the variable that
// switches it off (the credential-free mode), or "".
func checkBucket(m *tfModule, fs *findings) string {
	bs := m.resourcesOf(bucketType)
	if len(bs) != 1 {
		fs.add("bucket.count", m.dir, "want exactly one %s (the scripts bucket), found %d", bucketType, len(bs))
		return ""
	}
	b := bs[0]
	w, body := b.where(), b.body()
	mustConst := func(id, name string, want cty.Value, why string) {
		a := attr(body, name)
		if a == nil {
			fs.add(id, w, "%s is not set: %s", name, why)
			return
		}
		if v, ok := constant(a.Expr); !ok || !v.RawEquals(want) {
			fs.add(id, w, "%s must be the literal %s: %s", name, valueText(want, nil), why)
		}
	}
	mustConst("bucket.uniform_access", "uniform_bucket_level_access", cty.True, "IAM alone decides access, no object ACLs")
	mustConst("bucket.public_access_prevention", "public_access_prevention", cty.StringVal("enforced"), "the bucket is never public")
	mustConst("bucket.force_destroy", "force_destroy", cty.False, "terraform destroy must never delete scripts")
	if a := attr(sub(body, "versioning"), "enabled"); a == nil {
		fs.add("bucket.versioning", w, "versioning { enabled = true } is missing")
	} else if v, ok := constant(a.Expr); !ok || !v.RawEquals(cty.True) {
		fs.add("bucket.versioning", w, "versioning.enabled must be the literal true")
	}
	if a := attr(sub(body, "soft_delete_policy"), "retention_duration_seconds"); a == nil {
		fs.add("bucket.soft_delete", w, "soft_delete_policy.retention_duration_seconds is missing")
	} else if v, err := m.eval(a.Expr, nil); err != nil || !v.IsKnown() || v.Type() != cty.Number || v.LessThan(cty.NumberIntVal(7*86400)).True() {
		fs.add("bucket.soft_delete", w, "soft delete must keep objects 7 days or more by default, got %s", valueText(v, err))
	}

	cnt := attr(body, "count")
	if cnt == nil {
		fs.add("bucket.credential_free", w, "the bucket has no count: there is no credential-free mode that removes it")
		return ""
	}
	vars := varsOf(cnt.Expr)
	if len(vars) != 1 || m.variables[vars[0]] == nil || !m.variables[vars[0]].typ.Equals(cty.Bool) {
		fs.add("bucket.credential_free", w, "the bucket's count must follow one bool variable (the credential-free mode)")
		return ""
	}
	return vars[0]
}

// --- IAM ----------------------------------------------------------------------

func isIAM(typ string) bool {
	return strings.HasSuffix(typ, "_iam_member") || strings.HasSuffix(typ, "_iam_binding") ||
		strings.HasSuffix(typ, "_iam_policy") || strings.HasSuffix(typ, "_iam_audit_config")
}

// memberExpr is the member or members attribute of an IAM resource.
func memberExpr(r *tfBlock) *hclsyntax.Attribute {
	if a := attr(r.body(), "member"); a != nil {
		return a
	}
	return attr(r.body(), "members")
}

func checkIAM(m *tfModule, svc *tfBlock, credVar string, fs *findings) {
	// No public member anywhere, in any attribute, literal or default.
	checkNoPublicMembers(m, fs)

	var runtimeSA string
	if svc != nil {
		if a := attr(sub(svc.body(), "template"), "service_account"); a != nil {
			if names := referredNames(a.Expr, serviceAccountType); len(names) == 1 {
				runtimeSA = names[0]
			}
		}
	}

	var runtimeGrants, invokerGrants []*tfBlock
	for _, r := range m.resources {
		w := r.where()
		if mem := memberExpr(r); mem != nil && isIAM(r.typ) && runtimeSA != "" && refersTo(mem.Expr, serviceAccountType, runtimeSA) {
			runtimeGrants = append(runtimeGrants, r)
		}
		switch {
		case r.typ == "google_service_account_key":
			fs.add("iam.keys", w, "the module must create no service account keys")
			continue
		case strings.HasPrefix(r.typ, "google_project_iam_") || strings.HasPrefix(r.typ, "google_folder_iam_") ||
			strings.HasPrefix(r.typ, "google_organization_iam_") || strings.HasPrefix(r.typ, "google_billing_account_iam_"):
			fs.add("iam.project_level", w, "the module grants nothing above a single resource")
			continue
		case !isIAM(r.typ):
			continue
		}
		if !strings.HasSuffix(r.typ, "_iam_member") {
			fs.add("iam.authoritative", w, "only additive _iam_member resources: an authoritative %s replaces grants it does not list", r.typ)
			continue
		}
		mem := memberExpr(r)
		role, roleOK := constString(r.body(), "role")
		if mem == nil || !roleOK {
			fs.add("iam.shape", w, "an IAM member needs a literal role and a member")
			continue
		}
		if role == "roles/run.invoker" {
			invokerGrants = append(invokerGrants, r)
		}
		// A grant whose members come from a variable: the variable must refuse
		// public members.
		for _, v := range forEachVars(r) {
			for _, pub := range publicMembers {
				if err := m.validate(v, cty.ListVal([]cty.Value{cty.StringVal(pub)})); err == nil {
					fs.add("iam.public", w, "var.%s feeds the members of this grant and accepts %s", v, pub)
				}
			}
		}
	}

	// The runtime account: exactly one grant, read-only on the bucket.
	if runtimeSA != "" {
		switch len(runtimeGrants) {
		case 0:
			fs.add("iam.runtime_role", svc.where(), "the runtime service account has no read grant on the scripts bucket")
		case 1:
		default:
			var addrs []string
			for _, g := range runtimeGrants {
				addrs = append(addrs, g.addr())
			}
			fs.add("iam.runtime_role", svc.where(), "the runtime service account must have exactly one grant, has %d: %s", len(runtimeGrants), strings.Join(addrs, ", "))
		}
		for _, g := range runtimeGrants {
			role, _ := constString(g.body(), "role")
			if g.typ != "google_storage_bucket_iam_member" || !slices.Contains(readOnlyObjectRoles, role) {
				fs.add("iam.runtime_role", g.where(), "the runtime service account may only hold %s on the scripts bucket, not %s on %s", strings.Join(readOnlyObjectRoles, " or "), role, strings.TrimSuffix(g.typ, "_iam_member"))
			}
			if a := attr(g.body(), "bucket"); g.typ == "google_storage_bucket_iam_member" && (a == nil || !refersTo(a.Expr, bucketType, "")) {
				fs.add("iam.runtime_role", g.where(), "the runtime grant must be on the module's scripts bucket")
			}
		}
	}

	// Invokers: exactly the members of a validated variable.
	if len(invokerGrants) == 0 {
		fs.add("iam.invoker", m.dir, "no roles/run.invoker grant: nobody could call the service")
	}
	for _, g := range invokerGrants {
		w := g.where()
		if a := attr(g.body(), "name"); a == nil || !refersTo(a.Expr, serviceType, "") {
			fs.add("iam.invoker", w, "roles/run.invoker must be granted on the module's Cloud Run service only")
		}
		vars := forEachVars(g)
		mem := memberExpr(g)
		if len(vars) != 1 || traversalText(mem.Expr) != "each.value" {
			fs.add("iam.invoker", w, "roles/run.invoker must go to each member of one variable (for_each = toset(var.X), member = each.value)")
			continue
		}
		checkInvokerVariable(m, vars[0], w, fs)
	}
}

// checkInvokerVariable: the invoker list refuses empty and public lists.
func checkInvokerVariable(m *tfModule, name, w string, fs *findings) {
	list := func(ms ...string) cty.Value {
		if len(ms) == 0 {
			return cty.ListValEmpty(cty.String)
		}
		var vs []cty.Value
		for _, s := range ms {
			vs = append(vs, cty.StringVal(s))
		}
		return cty.ListVal(vs)
	}
	v := m.variables[name]
	if v == nil {
		fs.add("iam.invoker", w, "var.%s is not declared", name)
		return
	}
	if v.hasDefault && !v.def.IsNull() && v.def.LengthInt() == 0 {
		fs.add("iam.invoker_nonempty", w, "var.%s defaults to an empty list", name)
	}
	if err := m.validate(name, list()); err == nil {
		fs.add("iam.invoker_nonempty", w, "var.%s accepts an empty list: its validation must require at least one invoker", name)
	}
	for _, pub := range publicMembers {
		if err := m.validate(name, list("serviceAccount:loom@p.iam.gserviceaccount.com", pub)); err == nil {
			fs.add("iam.public", w, "var.%s accepts %s", name, pub)
		}
	}
	if err := m.validate(name, list("serviceAccount:loom@my-project.iam.gserviceaccount.com", "group:callers@example.com")); err != nil {
		fs.add("iam.invoker", w, "var.%s refuses a valid list of invokers: %v", name, err)
	}
}

// forEachVars lists the variables a resource's for_each reads.
func forEachVars(r *tfBlock) []string {
	if a := attr(r.body(), "for_each"); a != nil {
		return varsOf(a.Expr)
	}
	return nil
}

func traversalText(e hclsyntax.Expression) string {
	t, diags := hcl.AbsTraversalForExpr(e)
	if diags.HasErrors() {
		return ""
	}
	return traversalString(t)
}

// checkNoPublicMembers looks for allUsers and allAuthenticatedUsers in every
// attribute of every resource, data source and module call (literals, and
// values under the default variables), and in variable defaults.
func checkNoPublicMembers(m *tfModule, fs *findings) {
	var visit func(b *tfBlock, body *hclsyntax.Body)
	visit = func(b *tfBlock, body *hclsyntax.Body) {
		for _, a := range body.Attributes {
			for _, s := range literalStrings(a.Expr) {
				for _, pub := range publicMembers {
					if strings.Contains(s, pub) {
						fs.add("iam.public", b.where(), "%s contains %s", a.Name, pub)
					}
				}
			}
			if a.Name == "member" || a.Name == "members" {
				v, err := m.eval(a.Expr, nil)
				if ss, ok := stringsOf(v); err == nil && ok {
					for _, s := range ss {
						if slices.Contains(publicMembers, s) {
							fs.add("iam.public", b.where(), "%s is %s", a.Name, s)
						}
					}
				}
			}
		}
		for _, nb := range body.Blocks {
			visit(b, nb.Body)
		}
	}
	for _, b := range m.resources {
		visit(b, b.body())
	}
	for _, b := range m.data {
		visit(b, b.body())
	}
	for _, b := range m.modules {
		visit(b, b.body())
	}
	for _, name := range sortedKeys(m.variables) {
		v := m.variables[name]
		if !v.hasDefault {
			continue
		}
		if ss, ok := stringsOf(v.def); ok {
			for _, s := range ss {
				if slices.Contains(publicMembers, s) {
					fs.add("iam.public", fmt.Sprintf("%s:%d variable %s", v.file, v.line, name), "the default holds %s", s)
				}
			}
		}
	}
}

// --- the credential-free mode ---------------------------------------------------

// checkCredentialFree: with the bucket variable false, nothing of the bucket
// and no grant of the runtime account remain, and the service runs with
// STORE_URL=none; with it true, the bucket and its one read grant exist.
func checkCredentialFree(m *tfModule, svc *tfBlock, credVar string, fs *findings) {
	if credVar == "" || svc == nil {
		return
	}
	off := map[string]cty.Value{credVar: cty.False}
	on := map[string]cty.Value{credVar: cty.True}
	runtimeSA := ""
	if a := attr(sub(svc.body(), "template"), "service_account"); a != nil {
		if names := referredNames(a.Expr, serviceAccountType); len(names) == 1 {
			runtimeSA = names[0]
		}
	}
	for _, r := range m.resources {
		tiedToBucket := r.typ == bucketType || bodyRefers(r.body(), bucketType)
		grantsRuntime := isIAM(r.typ) && runtimeSA != "" && memberExpr(r) != nil && refersTo(memberExpr(r).Expr, serviceAccountType, runtimeSA)
		if !tiedToBucket && !grantsRuntime {
			continue
		}
		if n, err := instances(m, r, off); err != nil || n != 0 {
			fs.add("credential_free.leftover", r.where(), "with var.%s = false this must not exist, but it has %s instance(s)%s", credVar, countText(n, err), errText(err))
		}
		if r.typ == bucketType || grantsRuntime {
			if n, err := instances(m, r, on); err != nil || n != 1 {
				fs.add("credential_free.on", r.where(), "with var.%s = true there must be exactly one, got %s%s", credVar, countText(n, err), errText(err))
			}
		}
	}
	store := envOf(sub(svc.body(), "template", "containers"), "STORE_URL")
	if store == nil {
		fs.add("credential_free.store_url", svc.where(), "the container's environment must set STORE_URL")
		return
	}
	if v, err := m.eval(store.Expr, off); err != nil || !v.IsKnown() || v.Type() != cty.String || v.AsString() != "none" {
		fs.add("credential_free.store_url", svc.where(), `with var.%s = false STORE_URL must be "none", got %s`, credVar, valueText(v, err))
	}
	v, err := m.eval(store.Expr, on)
	gs := err == nil && v.Type() == cty.String && !v.IsNull() &&
		(v.IsKnown() && strings.HasPrefix(v.AsString(), "gs://") || !v.IsKnown() && strings.HasPrefix(v.Range().StringPrefix(), "gs://"))
	if !gs {
		fs.add("credential_free.store_url", svc.where(), "with var.%s = true STORE_URL must be gs://BUCKET, got %s", credVar, valueText(v, err))
	}
}

func bodyRefers(body *hclsyntax.Body, typ string) bool {
	for _, a := range body.Attributes {
		if refersTo(a.Expr, typ, "") {
			return true
		}
	}
	for _, b := range body.Blocks {
		if bodyRefers(b.Body, typ) {
			return true
		}
	}
	return false
}

// instances is how many instances count or for_each gives a resource.
func instances(m *tfModule, r *tfBlock, vars map[string]cty.Value) (int, error) {
	if a := attr(r.body(), "count"); a != nil {
		v, err := m.eval(a.Expr, vars)
		if err != nil {
			return -1, err
		}
		if !v.IsKnown() || v.Type() != cty.Number {
			return -1, fmt.Errorf("count is not a known number")
		}
		n, _ := v.AsBigFloat().Int64()
		return int(n), nil
	}
	if a := attr(r.body(), "for_each"); a != nil {
		v, err := m.eval(a.Expr, vars)
		if err != nil {
			return -1, err
		}
		if !v.IsWhollyKnown() || !v.CanIterateElements() {
			return -1, fmt.Errorf("for_each is not known")
		}
		return v.LengthInt(), nil
	}
	return 1, nil
}

// --- the network ------------------------------------------------------------

func checkNetwork(m *tfModule, svc *tfBlock, fs *findings) {
	nets := m.resourcesOf("google_compute_network")
	if len(nets) != 1 {
		fs.add("net.network", m.dir, "want exactly one google_compute_network (the dedicated egress network), found %d", len(nets))
		return
	}
	net := nets[0]
	nw := net.where()
	if v, ok := constant(exprOr(attr(net.body(), "auto_create_subnetworks"))); !ok || !v.RawEquals(cty.False) {
		fs.add("net.network", nw, "auto_create_subnetworks must be the literal false")
	}
	if v, ok := constant(exprOr(attr(net.body(), "delete_default_routes_on_create"))); !ok || !v.RawEquals(cty.True) {
		fs.add("net.default_route", nw, "delete_default_routes_on_create must be the literal true: no default route to the internet")
	}
	if svc != nil {
		ni := sub(svc.body(), "template", "vpc_access", "network_interfaces")
		if a := attr(ni, "network"); a == nil || !refersTo(a.Expr, "google_compute_network", net.name) {
			fs.add("net.network", svc.where(), "the service's network interface must be on %s", net.addr())
		}
	}

	subs := m.resourcesOf("google_compute_subnetwork")
	if len(subs) == 0 {
		fs.add("net.subnet", m.dir, "no google_compute_subnetwork")
	}
	for _, s := range subs {
		if v, ok := constant(exprOr(attr(s.body(), "private_ip_google_access"))); !ok || !v.RawEquals(cty.True) {
			fs.add("net.private_google_access", s.where(), "private_ip_google_access must be the literal true")
		}
		if a := attr(s.body(), "network"); a == nil || !refersTo(a.Expr, "google_compute_network", net.name) {
			fs.add("net.subnet", s.where(), "the subnet must be in %s", net.addr())
		}
	}

	// Routes: only to the Private Google Access range.
	gw := false
	for _, r := range m.resourcesOf("google_compute_route") {
		v, err := m.eval(exprOr(attr(r.body(), "dest_range")), nil)
		if err != nil || !v.IsKnown() || v.Type() != cty.String || v.AsString() != privateGoogleAPIsRange {
			fs.add("net.routes", r.where(), "the only route allowed is to %s (private.googleapis.com), got %s", privateGoogleAPIsRange, valueText(v, err))
			continue
		}
		if h, _ := constString(r.body(), "next_hop_gateway"); h == "default-internet-gateway" {
			gw = true
		}
	}
	if !gw {
		fs.add("net.routes", m.dir, "no route to %s through default-internet-gateway: Private Google Access would have no path", privateGoogleAPIsRange)
	}

	checkFirewall(m, net, fs)
	checkDNS(m, net, fs)
}

func exprOr(a *hclsyntax.Attribute) hclsyntax.Expression {
	if a == nil {
		return &hclsyntax.LiteralValueExpr{Val: cty.NullVal(cty.DynamicPseudoType)}
	}
	return a.Expr
}

type fwRule struct {
	r        *tfBlock
	priority int64
}

func checkFirewall(m *tfModule, net *tfBlock, fs *findings) {
	var allows, denies []fwRule
	for _, r := range m.resourcesOf("google_compute_firewall") {
		w, body := r.where(), r.body()
		if a := attr(body, "network"); a == nil || !refersTo(a.Expr, "google_compute_network", net.name) {
			fs.add("net.firewall", w, "the rule must be on %s", net.addr())
		}
		if a := attr(body, "disabled"); a != nil {
			if v, ok := constant(a.Expr); !ok || !v.RawEquals(cty.False) {
				fs.add("net.firewall", w, "disabled must be absent or the literal false")
			}
		}
		dir, _ := constString(body, "direction")
		if dir == "" {
			dir = "INGRESS" // the API's default
		}
		prio := int64(1000) // the API's default
		if a := attr(body, "priority"); a != nil {
			v, err := m.eval(a.Expr, nil)
			if err != nil || !v.IsKnown() || v.Type() != cty.Number {
				fs.add("net.firewall", w, "priority must be a known number")
				continue
			}
			prio, _ = v.AsBigFloat().Int64()
		}
		allowBlocks, denyBlocks := blocksOf(body, "allow"), blocksOf(body, "deny")
		if dir == "INGRESS" {
			if len(allowBlocks) > 0 {
				fs.add("net.firewall", w, "the egress network needs no ingress allow rule")
			}
			continue
		}
		if len(allowBlocks) > 0 {
			allows = append(allows, fwRule{r, prio})
			ranges, err := m.eval(exprOr(attr(body, "destination_ranges")), nil)
			rs, ok := stringsOf(ranges)
			if err != nil || !ok || len(rs) == 0 || slices.ContainsFunc(rs, func(s string) bool { return s != privateGoogleAPIsRange }) {
				fs.add("net.firewall_allow", w, "egress may be allowed only to %s, got %s", privateGoogleAPIsRange, valueText(ranges, err))
			}
			for _, ab := range allowBlocks {
				p, _ := constString(ab.Body, "protocol")
				ports, err := m.eval(exprOr(attr(ab.Body, "ports")), nil)
				ps, ok := stringsOf(ports)
				if p != "tcp" || err != nil || !ok || len(ps) != 1 || ps[0] != "443" {
					fs.add("net.firewall_allow", w, "egress may be allowed only on tcp 443")
				}
			}
		}
		for _, db := range denyBlocks {
			p, _ := constString(db.Body, "protocol")
			ranges, err := m.eval(exprOr(attr(body, "destination_ranges")), nil)
			rs, _ := stringsOf(ranges)
			targeted := attr(body, "target_tags") != nil || attr(body, "target_service_accounts") != nil
			if p == "all" && err == nil && slices.Contains(rs, "0.0.0.0/0") && !targeted {
				denies = append(denies, fwRule{r, prio})
			}
		}
	}
	if len(allows) == 0 {
		fs.add("net.firewall_allow", net.where(), "no egress rule allows %s on 443: the service could not reach Google APIs", privateGoogleAPIsRange)
	}
	if len(denies) == 0 {
		fs.add("net.deny_all", net.where(), "no egress rule denies all protocols to 0.0.0.0/0 for every instance of the network")
		return
	}
	// The deny-all rule must rank below every allow rule (a larger number is a
	// lower priority); the lowest-priority deny is the catch-all.
	best := denies[0]
	for _, d := range denies {
		if d.priority > best.priority {
			best = d
		}
	}
	for _, a := range allows {
		if a.priority >= best.priority {
			fs.add("net.deny_all", best.r.where(), "the deny-all rule (priority %d) must rank below the allow rule %s (priority %d)", best.priority, a.r.addr(), a.priority)
		}
	}
}

func checkDNS(m *tfModule, net *tfBlock, fs *findings) {
	var zone *tfBlock
	for _, z := range m.resourcesOf("google_dns_managed_zone") {
		if n, _ := constString(z.body(), "dns_name"); n == "googleapis.com." {
			zone = z
		}
	}
	if zone == nil {
		fs.add("net.dns", m.dir, `no google_dns_managed_zone for "googleapis.com."`)
		return
	}
	w := zone.where()
	if v, _ := constString(zone.body(), "visibility"); v != "private" {
		fs.add("net.dns", w, `visibility must be the literal "private"`)
	}
	if a := attr(sub(zone.body(), "private_visibility_config", "networks"), "network_url"); a == nil || !refersTo(a.Expr, "google_compute_network", net.name) {
		fs.add("net.dns", w, "the zone must be visible to %s", net.addr())
	}
	var cname, arec bool
	for _, r := range m.resourcesOf("google_dns_record_set") {
		if a := attr(r.body(), "managed_zone"); a == nil || !refersTo(a.Expr, "google_dns_managed_zone", zone.name) {
			continue
		}
		name, _ := constString(r.body(), "name")
		typ, _ := constString(r.body(), "type")
		v, err := m.eval(exprOr(attr(r.body(), "rrdatas")), nil)
		data, ok := stringsOf(v)
		if err != nil || !ok {
			continue
		}
		sort.Strings(data)
		want := slices.Clone(privateGoogleAPIsIPs)
		sort.Strings(want)
		switch {
		case name == "*.googleapis.com." && typ == "CNAME" && slices.Equal(data, []string{"private.googleapis.com."}):
			cname = true
		case name == "private.googleapis.com." && typ == "A" && slices.Equal(data, want):
			arec = true
		}
	}
	if !cname {
		fs.add("net.dns", w, "no CNAME *.googleapis.com. -> private.googleapis.com. in the zone")
	}
	if !arec {
		fs.add("net.dns", w, "no A record private.googleapis.com. -> %s in the zone", strings.Join(privateGoogleAPIsIPs, ", "))
	}
}

// --- versions, variables, outputs -------------------------------------------------

func checkVersions(m *tfModule, fs *findings) {
	var req, prov bool
	for _, t := range m.terraform {
		if v, ok := constString(t.body(), "required_version"); ok && strings.Contains(v, ">=") {
			req = true
		}
		a := attr(sub(t.body(), "required_providers"), "google")
		if a == nil {
			continue
		}
		v, ok := constant(a.Expr)
		if !ok || !v.Type().IsObjectType() || !v.Type().HasAttribute("source") || !v.Type().HasAttribute("version") {
			continue
		}
		src, ver := v.GetAttr("source"), v.GetAttr("version")
		if src.Type() == cty.String && src.AsString() == "hashicorp/google" && ver.Type() == cty.String &&
			strings.Contains(ver.AsString(), ">=") && strings.Contains(ver.AsString(), "<") {
			prov = true
		}
	}
	if !req {
		fs.add("versions.terraform", m.dir, "a terraform block must pin required_version with a lower bound")
	}
	if !prov {
		fs.add("versions.provider", m.dir, `required_providers must pin google = { source = "hashicorp/google", version = ">= x, < y" }`)
	}
}

// checkInterface: every variable typed and described; the outputs the issue
// names exist.
func checkInterface(m *tfModule, fs *findings) {
	checkVariablesDocumented(m, fs)
	have := map[string]bool{}
	for _, o := range m.outputs {
		have[o.name] = true
		if d, ok := constString(o.body(), "description"); !ok || d == "" {
			fs.add("outputs.documented", o.where(), "the output has no description")
		}
	}
	for _, want := range []string{"service_url", "bucket_name", "service_account_email"} {
		if !have[want] {
			fs.add("outputs.missing", m.dir, "output %s is missing", want)
		}
	}
}

func checkVariablesDocumented(m *tfModule, fs *findings) {
	for _, name := range sortedKeys(m.variables) {
		v := m.variables[name]
		w := fmt.Sprintf("%s:%d variable %s", v.file, v.line, name)
		if !v.hasType {
			fs.add("variables.typed", w, "no type")
		}
		if strings.TrimSpace(v.description) == "" {
			fs.add("variables.documented", w, "no description")
		}
	}
}

// --- rendering ----------------------------------------------------------------

func exprText(m *tfModule, b *tfBlock, e hclsyntax.Expression) string {
	r := e.Range()
	src := m.src[b.file]
	if r.End.Byte <= len(src) && r.Start.Byte < r.End.Byte {
		return string(src[r.Start.Byte:r.End.Byte])
	}
	return "?"
}

func valueText(v cty.Value, err error) string {
	switch {
	case err != nil:
		return "an error: " + err.Error()
	case v == cty.NilVal:
		return "nothing"
	case !v.IsWhollyKnown():
		return "an unknown value"
	case v.IsNull():
		return "null"
	case v.Type() == cty.String:
		return fmt.Sprintf("%q", v.AsString())
	case v.Type() == cty.Number:
		return v.AsBigFloat().Text('f', -1)
	case v.Type() == cty.Bool:
		return fmt.Sprint(v.True())
	default:
		return v.GoString()
	}
}

func countText(n int, err error) string {
	if err != nil {
		return "an unknown number of"
	}
	return fmt.Sprint(n)
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return " (" + err.Error() + ")"
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
