// Package kube is everything that talks to the Kubernetes API for the operator:
// the CRD installer, builders of desired objects, the status writer, Events and
// leader election. Builders are pure functions; callers own the clients.
package kube

import (
	"context"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apiextensionsv1client "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/typed/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/yaml"

	"github.com/mgors/operator/deploy"
)

// callTimeout bounds every single API call the installer makes.
const callTimeout = 10 * time.Second

// CRD decodes the Mgors CustomResourceDefinition embedded in the binary.
func CRD() (*apiextensionsv1.CustomResourceDefinition, error) {
	return decodeCRD("Mgors", deploy.CRD)
}

// BackupCRD decodes the MgorsBackup CustomResourceDefinition embedded in the binary.
func BackupCRD() (*apiextensionsv1.CustomResourceDefinition, error) {
	return decodeCRD("MgorsBackup", deploy.BackupCRD)
}

// RestoreCRD decodes the MgorsRestore CustomResourceDefinition embedded in the binary.
func RestoreCRD() (*apiextensionsv1.CustomResourceDefinition, error) {
	return decodeCRD("MgorsRestore", deploy.RestoreCRD)
}

// CRDs are every CustomResourceDefinition the operator installs: Mgors, then
// MgorsBackup, then MgorsRestore.
func CRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, decode := range []func() (*apiextensionsv1.CustomResourceDefinition, error){CRD, BackupCRD, RestoreCRD} {
		crd, err := decode()
		if err != nil {
			return nil, err
		}
		out = append(out, crd)
	}
	return out, nil
}

func decodeCRD(kind string, y []byte) (*apiextensionsv1.CustomResourceDefinition, error) {
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(y, &crd); err != nil {
		return nil, fmt.Errorf("decoding the embedded %s CRD: %w", kind, err)
	}
	return &crd, nil
}

// InstallCRD creates the operator's CRDs (CRDs: Mgors, MgorsBackup and
// MgorsRestore), or updates them to the embedded ones, and waits until the
// API server reports every one Established (or timeout passes), as the
// original operator created its TPR and waited for it before watching.
func InstallCRD(ctx context.Context, c apiextensionsclient.Interface, timeout time.Duration) error {
	wants, err := CRDs()
	if err != nil {
		return err
	}
	crds := c.ApiextensionsV1().CustomResourceDefinitions()
	for _, want := range wants {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			callCtx, cancel := context.WithTimeout(ctx, callTimeout)
			defer cancel()
			have, err := crds.Get(callCtx, want.Name, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
				_, err = crds.Create(callCtx, want, metav1.CreateOptions{})
				return err
			case err != nil:
				return err
			}
			updated := have.DeepCopy()
			updated.Spec = want.Spec
			updated.Labels = want.Labels
			updated.Annotations = want.Annotations
			_, err = crds.Update(callCtx, updated, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			return fmt.Errorf("installing CRD %s: %w", want.Name, err)
		}
	}
	waiting := wants[0].Name
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		for _, want := range wants {
			waiting = want.Name
			if !establishedNow(ctx, crds, want.Name) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for CRD %s to be Established: %w", waiting, err)
	}
	return nil
}

// establishedNow reads the CRD name and reports whether it is Established; a
// failed read is transient (not yet), and the caller polls until its deadline.
func establishedNow(ctx context.Context, crds apiextensionsv1client.CustomResourceDefinitionInterface, name string) bool {
	callCtx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	crd, err := crds.Get(callCtx, name, metav1.GetOptions{})
	return err == nil && Established(crd)
}

// Established reports whether the API server serves the CRD.
func Established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
			return true
		}
	}
	return false
}
