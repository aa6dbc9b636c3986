package kube

// Permission is one Kubernetes API right the operator's code uses: the verbs
// on one resource, and where the code calls them. The RBAC manifests in
// deploy/ grant exactly these (rbac_test.go checks it), so a verb the code no
// longer calls leaves the manifests with it, and a new call fails the test
// until the manifests and docs/design/security.md ("RBAC") say why.
type Permission struct {
	// Group is the API group ("" for the core group).
	Group string
	// Resource is the plural resource, with its subresource after a slash.
	Resource string
	// Verbs are the verbs used, in the manifests' order.
	Verbs []string
	// Names, when set, narrow the verbs to these object names.
	Names []string
	// ClusterScoped resources cannot be granted by a namespaced Role: the
	// namespaced install goes without them (docs/design/security.md).
	ClusterScoped bool
	// Leader is the Lease of leader election, granted in the operator's own
	// namespace only.
	Leader bool
	// Where names the code that makes the calls.
	Where string
}

// Permissions are every right the operator uses. Keep them in the order of
// deploy/rbac.yaml.
var Permissions = []Permission{
	{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions", Verbs: []string{"create"}, ClusterScoped: true,
		Where: "InstallCRD, by the leader only (create cannot be narrowed by name)"},
	{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions", Verbs: []string{"get", "update"},
		Names: []string{"mgorses.mgors.io", "mgorsbackups.mgors.io", "mgorsrestores.mgors.io"}, ClusterScoped: true, Where: "InstallCRD: upgrade and wait for Established"},
	{Group: "mgors.io", Resource: "mgorses", Verbs: []string{"get", "list", "watch", "patch"},
		Where: "Informers (list, watch), StatusWriter (get, only for a status that changed), RemoveAnnotation (patch)"},
	{Group: "mgors.io", Resource: "mgorses/status", Verbs: []string{"update"}, Where: "StatusWriter"},
	{Group: "mgors.io", Resource: "mgorsbackups", Verbs: []string{"get", "list", "watch", "create", "delete"},
		Where: "Informers (list, watch: Backups), StatusWriter.Backup (get, the fresh read after a conflict), " +
			"CreateBackup (create, get: a schedule's backup) and DeleteBackup (delete: one its keep prunes)"},
	{Group: "mgors.io", Resource: "mgorsbackups/status", Verbs: []string{"get", "update", "patch"},
		Where: "StatusWriter.Backup (update), the backup runner (docs/design/backup.md)"},
	{Group: "mgors.io", Resource: "mgorsrestores", Verbs: []string{"get", "list", "watch"},
		Where: "Informers (list, watch: Restores), StatusWriter.Restore (get, the fresh read after a conflict)"},
	{Group: "mgors.io", Resource: "mgorsrestores/status", Verbs: []string{"get", "update", "patch"},
		Where: "StatusWriter.Restore (update), the restore runner (docs/design/backup.md)"},
	{Group: "apps", Resource: "statefulsets", Verbs: []string{"get", "list", "watch", "create", "update", "delete"},
		Where: "Informers (list, watch), Applier.EnsureStatefulSet and ScaleStatefulSet, DeleteStatefulSet (the arbiters')"},
	{Resource: "services", Verbs: []string{"get", "list", "watch", "create", "update", "delete"},
		Where: "Informers (list, watch), Applier.EnsureService and EnsureExternalService, DeleteExternalService (spec.externalAccess)"},
	{Resource: "secrets", Verbs: []string{"get", "list", "watch", "create", "patch"},
		Where: "Informers (list, watch: without data), Informers.SecretData (get, once per resourceVersion), " +
			"Applier.ensureSecret and Secret (get, create), ProtectSecret and ReleaseSecret (patch: the finalizer), " +
			"RenewCertificate (patch: the certificate the operator issued)"},
	{Group: "policy", Resource: "poddisruptionbudgets", Verbs: []string{"get", "list", "watch", "create", "update"},
		Where: "Informers (list, watch), Applier.EnsurePodDisruptionBudget"},
	{Resource: "pods", Verbs: []string{"get", "list", "watch", "delete"},
		Where: "Informers (list, watch), DeletePod, ForceDeletePod, FencePod, WipeMember"},
	{Resource: "persistentvolumeclaims", Verbs: []string{"get", "list", "watch", "update", "delete"},
		Where: "Informers (list, watch), ExpandPVCs (get, update), WipeMember and DeletePVCs (get, delete)"},
	{Resource: "persistentvolumes", Verbs: []string{"get", "patch"}, ClusterScoped: true,
		Where: "WipeMember: a Retain volume's reclaim policy before its claim goes (invariant 4)"},
	{Resource: "nodes", Verbs: []string{"list", "watch"}, ClusterScoped: true,
		Where: "Informers, read by Nodes (node loss, fencing)"},
	{Group: "storage.k8s.io", Resource: "storageclasses", Verbs: []string{"list", "watch"}, ClusterScoped: true,
		Where: "Informers, read by Diagnose (a pending claim's class) and the storage growth (expansion allowed)"},
	{Resource: "events", Verbs: []string{"list", "watch", "create", "patch"},
		Where: "Informers: the StatefulSets' FailedCreate Events, read by Diagnose (list, watch); the event broadcaster (create, patch)"},
	{Resource: "configmaps", Verbs: []string{"get", "list", "create", "update", "patch", "delete"},
		Where: "eventlog.Kube: the event log's segments (an append is a patch, a snapshot an update)"},
	{Group: "coordination.k8s.io", Resource: "leases", Verbs: []string{"create"}, Leader: true,
		Where: "leader election (create cannot be narrowed by name)"},
	{Group: "coordination.k8s.io", Resource: "leases", Verbs: []string{"get", "update"}, Names: []string{"mgors-operator"},
		Leader: true, Where: "leader election"},
}
