package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The API's identity, fixed by the architecture.
const (
	// GroupName is the API group of Mgors.
	GroupName = "mgors.io"
	// Version is the API version of these types.
	Version = "v1alpha1"
	// Kind is the kind of a Mgors object.
	Kind = "Mgors"
	// Resource is the plural resource name.
	Resource = "mgorses"
	// BackupKind is the kind of a MgorsBackup object.
	BackupKind = "MgorsBackup"
	// BackupResource is MgorsBackup's plural resource name.
	BackupResource = "mgorsbackups"
	// RestoreKind is the kind of a MgorsRestore object.
	RestoreKind = "MgorsRestore"
	// RestoreResource is MgorsRestore's plural resource name.
	RestoreResource = "mgorsrestores"
)

var (
	// SchemeGroupVersion is the group and version of these types.
	SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: Version}
	// SchemeGroupVersionResource is the resource clients address.
	SchemeGroupVersionResource = SchemeGroupVersion.WithResource(Resource)
	// SchemeGroupVersionKind is the kind of a Mgors.
	SchemeGroupVersionKind = SchemeGroupVersion.WithKind(Kind)
	// BackupGroupVersionResource and BackupGroupVersionKind are MgorsBackup's.
	BackupGroupVersionResource = SchemeGroupVersion.WithResource(BackupResource)
	BackupGroupVersionKind     = SchemeGroupVersion.WithKind(BackupKind)
	// RestoreGroupVersionResource and RestoreGroupVersionKind are MgorsRestore's.
	RestoreGroupVersionResource = SchemeGroupVersion.WithResource(RestoreResource)
	RestoreGroupVersionKind     = SchemeGroupVersion.WithKind(RestoreKind)

	// SchemeBuilder collects the functions that add these types to a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds Mgors, MgorsBackup, MgorsRestore and their lists to a scheme, as the
	// original TPR operator registered its Mgors kind.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion, &Mgors{}, &MgorsList{}, &MgorsBackup{}, &MgorsBackupList{}, &MgorsRestore{}, &MgorsRestoreList{})
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	return nil
}
