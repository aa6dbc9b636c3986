// Package fake is an in-memory Mgors client for unit tests, on client-go's object
// tracker: reactors can inject errors such as conflicts, as with client-go's fakes.
package fake

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/gentype"
	"k8s.io/client-go/testing"

	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/kube/client"
)

// Clientset is a fake client.Interface holding objects in memory.
type Clientset struct {
	testing.Fake
	tracker testing.ObjectTracker
}

var _ client.Interface = (*Clientset)(nil)

// NewClientset returns a fake holding the given objects.
func NewClientset(objects ...runtime.Object) *Clientset {
	decoder := serializer.NewCodecFactory(client.Scheme).UniversalDecoder()
	tracker := testing.NewObjectTracker(client.Scheme, decoder)
	for _, o := range objects {
		if err := tracker.Add(o); err != nil {
			panic(err)
		}
	}
	c := &Clientset{tracker: tracker}
	c.AddReactor("*", "*", testing.ObjectReaction(tracker))
	c.AddWatchReactor("*", func(action testing.Action) (bool, watch.Interface, error) {
		// Pass the list options on: informers stream their initial list through
		// the watch and wait for its end bookmark, as client-go's fakes do.
		var opts metav1.ListOptions
		if wa, ok := action.(testing.WatchActionImpl); ok {
			opts = wa.ListOptions
		}
		w, err := tracker.Watch(action.GetResource(), action.GetNamespace(), opts)
		if err != nil {
			return false, nil, err
		}
		return true, w, nil
	})
	return c
}

// IsWatchListSemanticsUnSupported tells client-go's reflector that this fake
// cannot stream an initial list through a watch, as client-go's own fakes do.
func (c *Clientset) IsWatchListSemanticsUnSupported() bool { return true }

// Tracker is the object store behind the fake, for seeding and inspecting.
func (c *Clientset) Tracker() testing.ObjectTracker { return c.tracker }

// Mgorses addresses the Mgors objects of one namespace.
func (c *Clientset) Mgorses(namespace string) client.MgorsInterface {
	return gentype.NewFakeClientWithList[*v1alpha1.Mgors, *v1alpha1.MgorsList](
		&c.Fake, namespace, v1alpha1.SchemeGroupVersionResource, v1alpha1.SchemeGroupVersionKind,
		func() *v1alpha1.Mgors { return &v1alpha1.Mgors{} },
		func() *v1alpha1.MgorsList { return &v1alpha1.MgorsList{} },
		func(dst, src *v1alpha1.MgorsList) { dst.ListMeta = src.ListMeta },
		func(l *v1alpha1.MgorsList) []*v1alpha1.Mgors { return gentype.ToPointerSlice(l.Items) },
		func(l *v1alpha1.MgorsList, items []*v1alpha1.Mgors) { l.Items = gentype.FromPointerSlice(items) },
	)
}

// MgorsBackups addresses the MgorsBackup objects of one namespace.
func (c *Clientset) MgorsBackups(namespace string) client.MgorsBackupInterface {
	return gentype.NewFakeClientWithList[*v1alpha1.MgorsBackup, *v1alpha1.MgorsBackupList](
		&c.Fake, namespace, v1alpha1.BackupGroupVersionResource, v1alpha1.BackupGroupVersionKind,
		func() *v1alpha1.MgorsBackup { return &v1alpha1.MgorsBackup{} },
		func() *v1alpha1.MgorsBackupList { return &v1alpha1.MgorsBackupList{} },
		func(dst, src *v1alpha1.MgorsBackupList) { dst.ListMeta = src.ListMeta },
		func(l *v1alpha1.MgorsBackupList) []*v1alpha1.MgorsBackup { return gentype.ToPointerSlice(l.Items) },
		func(l *v1alpha1.MgorsBackupList, items []*v1alpha1.MgorsBackup) {
			l.Items = gentype.FromPointerSlice(items)
		},
	)
}

// MgorsRestores addresses the MgorsRestore objects of one namespace.
func (c *Clientset) MgorsRestores(namespace string) client.MgorsRestoreInterface {
	return gentype.NewFakeClientWithList[*v1alpha1.MgorsRestore, *v1alpha1.MgorsRestoreList](
		&c.Fake, namespace, v1alpha1.RestoreGroupVersionResource, v1alpha1.RestoreGroupVersionKind,
		func() *v1alpha1.MgorsRestore { return &v1alpha1.MgorsRestore{} },
		func() *v1alpha1.MgorsRestoreList { return &v1alpha1.MgorsRestoreList{} },
		func(dst, src *v1alpha1.MgorsRestoreList) { dst.ListMeta = src.ListMeta },
		func(l *v1alpha1.MgorsRestoreList) []*v1alpha1.MgorsRestore { return gentype.ToPointerSlice(l.Items) },
		func(l *v1alpha1.MgorsRestoreList, items []*v1alpha1.MgorsRestore) {
			l.Items = gentype.FromPointerSlice(items)
		},
	)
}
