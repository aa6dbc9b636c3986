package kube

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mgors/operator/kube/api/v1alpha1"
)

// The labels every object of a Mgors carries: the recommended app.kubernetes.io
// set, so generic tools understand them, and mgors.io/cluster, which is ours
// alone and so safe to select on.
const (
	LabelName      = "app.kubernetes.io/name"
	LabelInstance  = "app.kubernetes.io/instance"
	LabelManagedBy = "app.kubernetes.io/managed-by"
	LabelComponent = "app.kubernetes.io/component"
	LabelCluster   = "mgors.io/cluster"
	// LabelSchedule names the spec.backup.schedules entry that took a
	// MgorsBackup; only backups with it are ever pruned by the operator.
	LabelSchedule = "mgors.io/schedule"
)

// Label values.
const (
	// AppName is the app.kubernetes.io/name of everything a Mgors runs.
	AppName = "mongodb"
	// ManagedBy is the app.kubernetes.io/managed-by of everything the operator makes.
	ManagedBy = "mgors"
	// ComponentMember marks data-bearing members' pods and their objects.
	ComponentMember = "member"
	// ComponentArbiter marks arbiters' pods and their objects.
	ComponentArbiter = "arbiter"
)

// Labels are the common labels of an object of m for one component (member or
// arbiter; empty for objects shared by the whole cluster, such as Secrets).
func Labels(m *v1alpha1.Mgors, component string) map[string]string {
	l := map[string]string{
		LabelName:      AppName,
		LabelInstance:  m.Name,
		LabelManagedBy: ManagedBy,
		LabelCluster:   m.Name,
	}
	if component != "" {
		l[LabelComponent] = component
	}
	return l
}

// SelectorLabels select the pods of one component of m. They are the
// StatefulSet's selector, which cannot change after creation, so they hold
// only labels that never change: no version, no user labels.
func SelectorLabels(m *v1alpha1.Mgors, component string) map[string]string {
	return map[string]string{
		LabelName:      AppName,
		LabelCluster:   m.Name,
		LabelComponent: component,
	}
}

// ClusterSelectorLabels select every mongod pod of m, members and arbiters: the
// headless Service needs both, as each gets its DNS name from it.
func ClusterSelectorLabels(m *v1alpha1.Mgors) map[string]string {
	return map[string]string{
		LabelName:    AppName,
		LabelCluster: m.Name,
	}
}

// PodSelector is the selector of m's data-bearing member pods, as a string: the
// value of status.selector, which the scale subresource hands to autoscalers
// and kubectl.
func PodSelector(m *v1alpha1.Mgors) string {
	return labels.SelectorFromSet(SelectorLabels(m, ComponentMember)).String()
}

// OwnerReference makes m the controller of an object, so the garbage collector
// deletes the object with m (and waits for it with foreground deletion).
func OwnerReference(m *v1alpha1.Mgors) metav1.OwnerReference {
	yes := true
	return metav1.OwnerReference{
		APIVersion:         v1alpha1.SchemeGroupVersion.String(),
		Kind:               v1alpha1.Kind,
		Name:               m.Name,
		UID:                m.UID,
		Controller:         &yes,
		BlockOwnerDeletion: &yes,
	}
}

// OwnedBy reports whether m is the controller of obj. A name match is not
// enough: the UID tells a re-created Mgors of the same name from its
// predecessor. The version is not compared, so ownership survives a new API version.
func OwnedBy(obj metav1.Object, m *v1alpha1.Mgors) bool {
	ref := metav1.GetControllerOfNoCopy(obj)
	if ref == nil || ref.UID != m.UID || ref.Kind != v1alpha1.Kind {
		return false
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	return err == nil && gv.Group == v1alpha1.GroupName
}

// objectMeta is the metadata of an object of m: name, namespace, common labels
// and m as controller.
func objectMeta(m *v1alpha1.Mgors, name, component string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:            name,
		Namespace:       m.Namespace,
		Labels:          Labels(m, component),
		OwnerReferences: []metav1.OwnerReference{OwnerReference(m)},
	}
}
