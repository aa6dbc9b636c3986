package kubelet

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"

	"golang.org/x/sys/unix"
)

func isMountPoint(p string) bool {
	var st, parent unixStat
	if statDev(p, &st) != nil || statDev(filepath.Dir(p), &parent) != nil {
		return false
	}
	return st.dev != parent.dev
}

func (w *podWorker) setupSandbox(ctx context.Context, pod *corev1.Pod) error {
	if err := os.MkdirAll(w.dir, 0o755); err != nil {
		return err
	}
	meta := podMeta{Namespace: pod.Namespace, Name: pod.Name, UID: string(pod.UID)}
	if pod.Spec.HostNetwork {
		meta.IP = w.k.cfg.NodeIP
	} else {
		ip, err := w.k.ipam.Lease(string(pod.UID))
		if err != nil {
			return err
		}
		meta.IP, meta.Veth = ip.String(), vethName(string(pod.UID))
	}
	b, _ := json.Marshal(meta)
	if err := writeFileAtomic(filepath.Join(w.dir, "pod.json"), b, 0o644); err != nil {
		return err
	}
	if !pod.Spec.HostNetwork {
		nsPath := filepath.Join(w.dir, "netns")
		_ = teardownNetwork(w.dir, meta.Veth)
		if err := newNetns(nsPath); err != nil {
			return err
		}
		ip, _ := netip.ParseAddr(meta.IP)
		if err := setupNetwork(ctx, w.k.net, nsPath, meta.Veth, ip); err != nil {
			_ = teardownNetwork(w.dir, meta.Veth)
			return err
		}
	}
	w.ip = meta.IP
	host := containerHostname(pod, w.k.cfg.ClusterDomain)
	hosts := renderHosts(pod, meta.IP, w.k.cfg.ClusterDomain)
	if pod.Spec.HostNetwork {
		// A pod on the node's network sees the node's hosts file, as with a kubelet.
		b, _ := os.ReadFile("/etc/hosts")
		hosts = string(b)
	}
	files := map[string]string{
		"etc-hosts":   hosts,
		"resolv.conf": renderResolvConf(pod, w.k.cfg.ClusterDNS, w.k.cfg.ClusterDomain, hostResolvConf()),
		"hostname":    host + "\n",
	}
	for name, content := range files {
		if err := writeFileAtomic(filepath.Join(w.dir, name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	if err := w.refreshVolumes(pod, true); err != nil {
		return err
	}
	if w.startTime.IsZero() {
		w.startTime = time.Now()
		_ = os.WriteFile(filepath.Join(w.dir, "start-time"), []byte(w.startTime.UTC().Format(time.RFC3339Nano)), 0o644)
	}
	w.sandboxReady = true
	w.log.Info().Str("ip", meta.IP).Msg("pod sandbox ready")
	return nil
}

// refreshVolumes prepares the pod's volumes at setup and rewrites content volumes
// (Secrets, ConfigMaps, tokens) every minute so that they follow their sources.
func (w *podWorker) refreshVolumes(pod *corev1.Pod, force bool) error {
	if !force && time.Since(w.volumesAt) < time.Minute {
		return nil
	}
	hostIP := w.k.cfg.NodeIP
	view := pod.DeepCopy()
	view.Status.PodIP = w.ip
	vols := map[string]string{}
	var fsGroup *int64
	if pod.Spec.SecurityContext != nil {
		fsGroup = pod.Spec.SecurityContext.FSGroup
	}
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		dir := filepath.Join(w.dir, "volumes", volumeDirName(v.Name))
		switch {
		case v.HostPath != nil:
			p, err := hostPathFor(v.HostPath)
			if err != nil {
				return err
			}
			vols[v.Name] = p
		case v.PersistentVolumeClaim != nil:
			p, err := w.k.api.ClaimPath(pod.Namespace, v.PersistentVolumeClaim.ClaimName)
			if err != nil {
				return err
			}
			if force && fsGroup != nil {
				if err := applyFSGroup(p, *fsGroup); err != nil {
					return err
				}
			}
			vols[v.Name] = p
		case v.EmptyDir != nil:
			if err := os.MkdirAll(dir, 0o777); err != nil {
				return err
			}
			if v.EmptyDir.Medium == corev1.StorageMediumMemory && !isMountPoint(dir) {
				// Shared by the pod's containers, so mounted on the node, under Dir.
				opts := "mode=0777"
				if l := v.EmptyDir.SizeLimit; l != nil && !l.IsZero() {
					opts += ",size=" + strconv.FormatInt(l.Value(), 10)
				}
				if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
					return fmt.Errorf("emptyDir %s in memory: %w", v.Name, err)
				}
			}
			_ = os.Chmod(dir, 0o777)
			if force && fsGroup != nil {
				if err := applyFSGroup(dir, *fsGroup); err != nil {
					return err
				}
			}
			vols[v.Name] = dir
		case isContentVolume(v):
			files, _, err := volumeContent(view, v, w.k.api, w.k.cfg.NodeName, hostIP)
			if err != nil {
				return err
			}
			if err := writeVolumeFiles(dir, files, fsGroup); err != nil {
				return err
			}
			vols[v.Name] = dir
		default:
			w.log.Warn().Str("volume", v.Name).Msg("unsupported volume type: an empty directory stands in")
			_ = os.MkdirAll(dir, 0o777)
			vols[v.Name] = dir
		}
	}
	w.volumes = vols
	w.volumesAt = time.Now()
	return nil
}

// teardown removes the pod's sandbox: its pause process, veth, network namespace
// pin and address lease.
func (w *podWorker) teardown() {
	stopPause(w.dir)
	m, _ := readPodMeta(w.dir)
	if err := teardownNetwork(w.dir, m.Veth); err != nil {
		w.log.Warn().Err(err).Msg("tear down network")
	}
	w.k.ipam.Release(w.uid)
	w.sandboxReady = false
}

// cleanupDisk removes the pod's directory once the pod is deleted.
func (w *podWorker) cleanupDisk() {
	// Volumes that are the pod's own (emptyDir, content) go with it; PVC and hostPath
	// directories live elsewhere and are never touched.
	if err := unmountVolumes(w.dir); err != nil {
		w.log.Warn().Err(err).Msg("unmount volumes")
		return // never remove what may still be mounted
	}
	if err := os.RemoveAll(w.dir); err != nil {
		w.log.Warn().Err(err).Msg("remove pod directory")
	}
}
