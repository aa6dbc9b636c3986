// Package client is the typed client of the Mgors API, built on client-go's
// generic gentype client so that no REST plumbing is written by hand.
package client

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/gentype"
	"k8s.io/client-go/rest"

	"github.com/mgors/operator/kube/api/v1alpha1"
)

// Scheme knows the Mgors types; the client encodes and decodes with it.
var Scheme = runtime.NewScheme()

// ParameterCodec encodes list and get options as query parameters.
var ParameterCodec = runtime.NewParameterCodec(Scheme)

func init() {
	if err := v1alpha1.AddToScheme(Scheme); err != nil {
		panic(fmt.Sprintf("registering the Mgors types: %v", err))
	}
}

// Interface is the Mgors API, for production code and for its fake alike.
type Interface interface {
	// Mgorses addresses the Mgors objects of one namespace ("" for all).
	Mgorses(namespace string) MgorsInterface
	// MgorsBackups addresses the MgorsBackup objects of one namespace ("" for all).
	MgorsBackups(namespace string) MgorsBackupInterface
	// MgorsRestores addresses the MgorsRestore objects of one namespace ("" for all).
	MgorsRestores(namespace string) MgorsRestoreInterface
}

// MgorsInterface reads and writes Mgors objects: get, list, watch, create,
// update, update status, patch and delete.
type MgorsInterface interface {
	Create(ctx context.Context, m *v1alpha1.Mgors, opts metav1.CreateOptions) (*v1alpha1.Mgors, error)
	Update(ctx context.Context, m *v1alpha1.Mgors, opts metav1.UpdateOptions) (*v1alpha1.Mgors, error)
	UpdateStatus(ctx context.Context, m *v1alpha1.Mgors, opts metav1.UpdateOptions) (*v1alpha1.Mgors, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*v1alpha1.Mgors, error)
	List(ctx context.Context, opts metav1.ListOptions) (*v1alpha1.MgorsList, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (*v1alpha1.Mgors, error)
}

// MgorsBackupInterface reads and writes MgorsBackup objects, with the verbs
// of MgorsInterface.
type MgorsBackupInterface interface {
	Create(ctx context.Context, b *v1alpha1.MgorsBackup, opts metav1.CreateOptions) (*v1alpha1.MgorsBackup, error)
	Update(ctx context.Context, b *v1alpha1.MgorsBackup, opts metav1.UpdateOptions) (*v1alpha1.MgorsBackup, error)
	UpdateStatus(ctx context.Context, b *v1alpha1.MgorsBackup, opts metav1.UpdateOptions) (*v1alpha1.MgorsBackup, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*v1alpha1.MgorsBackup, error)
	List(ctx context.Context, opts metav1.ListOptions) (*v1alpha1.MgorsBackupList, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (*v1alpha1.MgorsBackup, error)
}

// MgorsRestoreInterface reads and writes MgorsRestore objects, with the verbs
// of MgorsInterface.
type MgorsRestoreInterface interface {
	Create(ctx context.Context, r *v1alpha1.MgorsRestore, opts metav1.CreateOptions) (*v1alpha1.MgorsRestore, error)
	Update(ctx context.Context, r *v1alpha1.MgorsRestore, opts metav1.UpdateOptions) (*v1alpha1.MgorsRestore, error)
	UpdateStatus(ctx context.Context, r *v1alpha1.MgorsRestore, opts metav1.UpdateOptions) (*v1alpha1.MgorsRestore, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*v1alpha1.MgorsRestore, error)
	List(ctx context.Context, opts metav1.ListOptions) (*v1alpha1.MgorsRestoreList, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (*v1alpha1.MgorsRestore, error)
}

// Clientset talks to the API server's mgors.io/v1alpha1 endpoints.
type Clientset struct {
	rest rest.Interface
}

var _ Interface = (*Clientset)(nil)

// NewForConfig builds a Clientset from a client-go config.
func NewForConfig(cfg *rest.Config) (*Clientset, error) {
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &v1alpha1.SchemeGroupVersion
	c.APIPath = "/apis"
	c.NegotiatedSerializer = serializer.NewCodecFactory(Scheme).WithoutConversion()
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	rc, err := rest.RESTClientFor(c)
	if err != nil {
		return nil, fmt.Errorf("mgors client: %w", err)
	}
	return &Clientset{rest: rc}, nil
}

// Mgorses addresses the Mgors objects of one namespace ("" for all).
func (c *Clientset) Mgorses(namespace string) MgorsInterface {
	return gentype.NewClientWithList[*v1alpha1.Mgors, *v1alpha1.MgorsList](
		v1alpha1.Resource, c.rest, ParameterCodec, namespace,
		func() *v1alpha1.Mgors { return &v1alpha1.Mgors{} },
		func() *v1alpha1.MgorsList { return &v1alpha1.MgorsList{} },
	)
}

// MgorsBackups addresses the MgorsBackup objects of one namespace ("" for all).
func (c *Clientset) MgorsBackups(namespace string) MgorsBackupInterface {
	return gentype.NewClientWithList[*v1alpha1.MgorsBackup, *v1alpha1.MgorsBackupList](
		v1alpha1.BackupResource, c.rest, ParameterCodec, namespace,
		func() *v1alpha1.MgorsBackup { return &v1alpha1.MgorsBackup{} },
		func() *v1alpha1.MgorsBackupList { return &v1alpha1.MgorsBackupList{} },
	)
}

// MgorsRestores addresses the MgorsRestore objects of one namespace ("" for all).
func (c *Clientset) MgorsRestores(namespace string) MgorsRestoreInterface {
	return gentype.NewClientWithList[*v1alpha1.MgorsRestore, *v1alpha1.MgorsRestoreList](
		v1alpha1.RestoreResource, c.rest, ParameterCodec, namespace,
		func() *v1alpha1.MgorsRestore { return &v1alpha1.MgorsRestore{} },
		func() *v1alpha1.MgorsRestoreList { return &v1alpha1.MgorsRestoreList{} },
	)
}

// RESTClient is the underlying REST client, for informers' list-watch.
func (c *Clientset) RESTClient() rest.Interface { return c.rest }
