package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rs/zerolog"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

const (
	annProvisionedBy = "pv.kubernetes.io/provisioned-by"
	annSelectedNode  = "volume.kubernetes.io/selected-node"
)

// RunProvisioner serves StorageClasses whose provisioner is Provisioner: it creates a
// hostPath PersistentVolume, backed by a fresh directory under DIR/volumes, for each
// pending claim (once the scheduler picked a node, for WaitForFirstConsumer
// classes), and honours the reclaim policy of released volumes: Delete removes the
// directory and the PV, Retain keeps both. The PV controller of
// kube-controller-manager does the binding, as with any external provisioner.
//
// It is also the volumes' resizer, as a CSI driver with online expansion and no
// node-side step would be with its external-resizer (resize.go).
//
// It reconciles by listing every second rather than through informers: the
// volumes of a test cluster number in the tens, and a full pass each time keeps the
// loop stateless across restarts.
func RunProvisioner(ctx context.Context, dir string, log zerolog.Logger) error {
	l, cs, err := componentClient(dir, "provisioner")
	if err != nil {
		return err
	}
	p := &provisioner{cs: cs, volumes: l.volumes(), log: log}
	log.Info().Str("provisioner", Provisioner).Msg("provisioner running")
	for {
		if err := p.pass(ctx); err != nil && ctx.Err() == nil {
			log.Warn().Err(err).Msg("provisioner pass failed")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
	}
}

type provisioner struct {
	cs      kubernetes.Interface
	volumes string
	log     zerolog.Logger
}

func (p *provisioner) pass(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	classes, err := p.cs.StorageV1().StorageClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	ours := map[string]storagev1.StorageClass{}
	for _, c := range classes.Items {
		if c.Provisioner == Provisioner {
			ours[c.Name] = c
		}
	}
	claims, err := p.cs.CoreV1().PersistentVolumeClaims("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for i := range claims.Items {
		pvc := &claims.Items[i]
		sc, ok := ours[classOf(pvc)]
		if !ok {
			continue
		}
		if needsResize(pvc) {
			if err := p.resize(ctx, pvc); err != nil {
				p.log.Warn().Err(err).Str("claim", pvc.Namespace+"/"+pvc.Name).Msg("resizing failed")
			}
			continue
		}
		if !needsVolume(pvc, &sc) {
			continue
		}
		if err := p.provision(ctx, pvc, &sc); err != nil {
			p.log.Warn().Err(err).Str("claim", pvc.Namespace+"/"+pvc.Name).Msg("provisioning failed")
		}
	}
	pvs, err := p.cs.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for i := range pvs.Items {
		pv := &pvs.Items[i]
		if pv.Annotations[annProvisionedBy] != Provisioner || pv.Status.Phase != corev1.VolumeReleased ||
			pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete || pv.DeletionTimestamp != nil {
			continue
		}
		if err := p.remove(ctx, pv); err != nil {
			p.log.Warn().Err(err).Str("volume", pv.Name).Msg("deleting volume failed")
		}
	}
	return nil
}

func classOf(pvc *corev1.PersistentVolumeClaim) string {
	if pvc.Spec.StorageClassName != nil {
		return *pvc.Spec.StorageClassName
	}
	return ""
}

// needsVolume: an unbound, pending filesystem claim, and for WaitForFirstConsumer
// classes one the scheduler has placed.
func needsVolume(pvc *corev1.PersistentVolumeClaim, sc *storagev1.StorageClass) bool {
	if pvc.Spec.VolumeName != "" || pvc.Status.Phase != corev1.ClaimPending || pvc.DeletionTimestamp != nil {
		return false
	}
	if pvc.Spec.VolumeMode != nil && *pvc.Spec.VolumeMode != corev1.PersistentVolumeFilesystem {
		return false
	}
	if pvc.Spec.DataSource != nil || pvc.Spec.Selector != nil {
		return false
	}
	if sc.VolumeBindingMode != nil && *sc.VolumeBindingMode == storagev1.VolumeBindingWaitForFirstConsumer {
		return pvc.Annotations[annSelectedNode] != ""
	}
	return true
}

// volumeName is the PV of a claim, named as external provisioners name theirs so
// that a retried pass finds the PV it made before.
func volumeName(pvc *corev1.PersistentVolumeClaim) string { return "pvc-" + string(pvc.UID) }

func (p *provisioner) provision(ctx context.Context, pvc *corev1.PersistentVolumeClaim, sc *storagev1.StorageClass) error {
	name := volumeName(pvc)
	path := filepath.Join(p.volumes, name)
	if err := os.MkdirAll(path, 0o777); err != nil {
		return err
	}
	// Any pod user may write to a fresh volume, as on a freshly formatted disk
	// mounted for a pod with an fsGroup.
	if err := os.Chmod(path, 0o777); err != nil {
		return err
	}
	reclaim := corev1.PersistentVolumeReclaimDelete
	if sc.ReclaimPolicy != nil {
		reclaim = *sc.ReclaimPolicy
	}
	size, ok := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	if !ok {
		return fmt.Errorf("claim requests no storage")
	}
	hostPathType := corev1.HostPathDirectory
	fs := corev1.PersistentVolumeFilesystem
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{annProvisionedBy: Provisioner},
			Labels:      map[string]string{"app.kubernetes.io/managed-by": "localkube"},
		},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: size},
			AccessModes:                   pvc.Spec.AccessModes,
			PersistentVolumeReclaimPolicy: reclaim,
			StorageClassName:              sc.Name,
			VolumeMode:                    &fs,
			MountOptions:                  sc.MountOptions,
			ClaimRef: &corev1.ObjectReference{
				Kind: "PersistentVolumeClaim", APIVersion: "v1",
				Namespace: pvc.Namespace, Name: pvc.Name, UID: pvc.UID,
			},
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: path, Type: &hostPathType},
			},
		},
	}
	_, err := p.cs.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if err != nil {
		return err
	}
	p.log.Info().Str("claim", pvc.Namespace+"/"+pvc.Name).Str("volume", name).Str("reclaim", string(reclaim)).Msg("provisioned")
	return nil
}

func (p *provisioner) remove(ctx context.Context, pv *corev1.PersistentVolume) error {
	if pv.Spec.HostPath != nil {
		path := filepath.Clean(pv.Spec.HostPath.Path)
		// Only ever delete a directory this provisioner made.
		if filepath.Dir(path) != p.volumes || !strings.HasPrefix(filepath.Base(path), "pvc-") {
			return fmt.Errorf("volume %s: path %s is not one of ours", pv.Name, path)
		}
		if err := os.RemoveAll(path); err != nil {
			return err
		}
	}
	err := p.cs.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	p.log.Info().Str("volume", pv.Name).Msg("deleted released volume")
	return nil
}
