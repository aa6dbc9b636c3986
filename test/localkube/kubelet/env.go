package kubelet

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// expand replaces $(NAME) references the way Kubernetes does for env values, command
// and args: $(NAME) becomes the value when NAME is known and stays as written when it
// is not, $$ is an escaped $, and any other $ is kept.
func expand(s string, lookup func(string) (string, bool)) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			name := s[i+2 : i+2+end]
			if v, ok := lookup(name); ok {
				b.WriteString(v)
			} else {
				b.WriteString("$(" + name + ")")
			}
			i += end + 2
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

// objectSource reads the Secrets and ConfigMaps of a pod's namespace for env and
// volumes; the live implementation asks the API server, tests hand a map.
type objectSource interface {
	Secret(namespace, name string) (*corev1.Secret, error)
	ConfigMap(namespace, name string) (*corev1.ConfigMap, error)
}

// envVar is one environment entry in order.
type envVar struct{ Name, Value string }

// configError is a container whose configuration cannot be resolved (missing
// Secret or ConfigMap key, runAsNonRoot violated): Kubernetes reports it as the
// waiting reason CreateContainerConfigError and retries.
type configError struct{ msg string }

func (e *configError) Error() string { return e.msg }

// containerEnv computes a container's environment in the order a kubelet does:
// image env, then the cluster service variables, then envFrom, then env, each later
// entry overriding an earlier one of the same name; env values expand $(VAR) against
// what is defined before them.
func containerEnv(pod *corev1.Pod, c *corev1.Container, image []envVar, svc []envVar, src objectSource, nodeName, hostIP string) ([]envVar, error) {
	var out []envVar
	index := map[string]int{}
	set := func(k, v string) {
		if i, ok := index[k]; ok {
			out[i].Value = v
			return
		}
		index[k] = len(out)
		out = append(out, envVar{k, v})
	}
	for _, e := range image {
		set(e.Name, e.Value)
	}
	for _, e := range svc {
		set(e.Name, e.Value)
	}
	lookup := func(k string) (string, bool) {
		if i, ok := index[k]; ok {
			return out[i].Value, true
		}
		return "", false
	}
	for _, ef := range c.EnvFrom {
		var data map[string]string
		optional := false
		switch {
		case ef.ConfigMapRef != nil:
			optional = ef.ConfigMapRef.Optional != nil && *ef.ConfigMapRef.Optional
			cm, err := src.ConfigMap(pod.Namespace, ef.ConfigMapRef.Name)
			if err != nil {
				if optional {
					continue
				}
				return nil, &configError{fmt.Sprintf("configmap %q not found", ef.ConfigMapRef.Name)}
			}
			data = cm.Data
		case ef.SecretRef != nil:
			optional = ef.SecretRef.Optional != nil && *ef.SecretRef.Optional
			s, err := src.Secret(pod.Namespace, ef.SecretRef.Name)
			if err != nil {
				if optional {
					continue
				}
				return nil, &configError{fmt.Sprintf("secret %q not found", ef.SecretRef.Name)}
			}
			data = map[string]string{}
			for k, v := range s.Data {
				data[k] = string(v)
			}
		}
		for _, k := range slices.Sorted(maps.Keys(data)) {
			set(ef.Prefix+k, data[k])
		}
	}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			set(e.Name, expand(e.Value, lookup))
			continue
		}
		v, ok, err := envValueFrom(pod, c, e.ValueFrom, src, nodeName, hostIP)
		if err != nil {
			return nil, err
		}
		if ok {
			set(e.Name, v)
		}
	}
	return out, nil
}

func envValueFrom(pod *corev1.Pod, c *corev1.Container, vf *corev1.EnvVarSource, src objectSource, nodeName, hostIP string) (string, bool, error) {
	switch {
	case vf.FieldRef != nil:
		v, err := podField(pod, vf.FieldRef.FieldPath, nodeName, hostIP)
		return v, err == nil, err
	case vf.ResourceFieldRef != nil:
		v, err := resourceField(pod, c, vf.ResourceFieldRef)
		return v, err == nil, err
	case vf.ConfigMapKeyRef != nil:
		r := vf.ConfigMapKeyRef
		optional := r.Optional != nil && *r.Optional
		cm, err := src.ConfigMap(pod.Namespace, r.Name)
		if err != nil {
			if optional {
				return "", false, nil
			}
			return "", false, &configError{fmt.Sprintf("configmap %q not found", r.Name)}
		}
		v, ok := cm.Data[r.Key]
		if !ok {
			if optional {
				return "", false, nil
			}
			return "", false, &configError{fmt.Sprintf("couldn't find key %s in ConfigMap %s/%s", r.Key, pod.Namespace, r.Name)}
		}
		return v, true, nil
	case vf.SecretKeyRef != nil:
		r := vf.SecretKeyRef
		optional := r.Optional != nil && *r.Optional
		s, err := src.Secret(pod.Namespace, r.Name)
		if err != nil {
			if optional {
				return "", false, nil
			}
			return "", false, &configError{fmt.Sprintf("secret %q not found", r.Name)}
		}
		v, ok := s.Data[r.Key]
		if !ok {
			if optional {
				return "", false, nil
			}
			return "", false, &configError{fmt.Sprintf("couldn't find key %s in Secret %s/%s", r.Key, pod.Namespace, r.Name)}
		}
		return string(v), true, nil
	}
	return "", false, nil
}

// podField answers a downward API fieldRef.
func podField(pod *corev1.Pod, path, nodeName, hostIP string) (string, error) {
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "spec.nodeName":
		return nodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.hostIP", "status.hostIPs":
		return hostIP, nil
	case "status.podIP", "status.podIPs":
		return pod.Status.PodIP, nil
	case "metadata.labels":
		return formatMap(pod.Labels), nil
	case "metadata.annotations":
		return formatMap(pod.Annotations), nil
	}
	for _, m := range []struct {
		prefix string
		data   map[string]string
	}{{"metadata.labels['", pod.Labels}, {"metadata.annotations['", pod.Annotations}} {
		if strings.HasPrefix(path, m.prefix) && strings.HasSuffix(path, "']") {
			return m.data[strings.TrimSuffix(strings.TrimPrefix(path, m.prefix), "']")], nil
		}
	}
	return "", &configError{fmt.Sprintf("unsupported fieldPath %q", path)}
}

// formatMap renders labels or annotations as the downward API does: key="value"
// lines, sorted by key.
func formatMap(m map[string]string) string {
	var lines []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		lines = append(lines, fmt.Sprintf("%s=%s", k, strconv.Quote(m[k])))
	}
	return strings.Join(lines, "\n")
}

// resourceField answers a resourceFieldRef; an unset limit reports the node's
// allocatable, as a kubelet does.
func resourceField(pod *corev1.Pod, c *corev1.Container, r *corev1.ResourceFieldSelector) (string, error) {
	target := c
	if r.ContainerName != "" {
		target = nil
		for i := range pod.Spec.Containers {
			if pod.Spec.Containers[i].Name == r.ContainerName {
				target = &pod.Spec.Containers[i]
			}
		}
		for i := range pod.Spec.InitContainers {
			if pod.Spec.InitContainers[i].Name == r.ContainerName {
				target = &pod.Spec.InitContainers[i]
			}
		}
		if target == nil {
			return "", &configError{fmt.Sprintf("container %q not found", r.ContainerName)}
		}
	}
	divisor := r.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	var q resource.Quantity
	var ok bool
	switch r.Resource {
	case "limits.cpu":
		q, ok = target.Resources.Limits[corev1.ResourceCPU]
		if !ok {
			q = *resource.NewQuantity(int64(nodeCPUs()), resource.DecimalSI)
		}
	case "requests.cpu":
		q = target.Resources.Requests[corev1.ResourceCPU]
	case "limits.memory":
		q, ok = target.Resources.Limits[corev1.ResourceMemory]
		if !ok {
			q = *resource.NewQuantity(nodeMemoryBytes(), resource.BinarySI)
		}
	case "requests.memory":
		q = target.Resources.Requests[corev1.ResourceMemory]
	case "limits.ephemeral-storage", "requests.ephemeral-storage":
		q = target.Resources.Limits[corev1.ResourceEphemeralStorage]
	default:
		return "", &configError{fmt.Sprintf("unsupported resource %q", r.Resource)}
	}
	// Kubernetes rounds up: ceil(quantity / divisor).
	if strings.HasSuffix(r.Resource, "cpu") {
		v := (q.MilliValue() + divisor.MilliValue() - 1) / divisor.MilliValue()
		return strconv.FormatInt(v, 10), nil
	}
	v := (q.Value() + divisor.Value() - 1) / divisor.Value()
	return strconv.FormatInt(v, 10), nil
}

// serviceEnv is the part of the service links a kubelet always sets: the API server
// as the "kubernetes" service of the default namespace.
func serviceEnv(host string, port int) []envVar {
	if host == "" {
		return nil
	}
	p := strconv.Itoa(port)
	addr := "tcp://" + host + ":" + p
	return []envVar{
		{"KUBERNETES_SERVICE_HOST", host},
		{"KUBERNETES_SERVICE_PORT", p},
		{"KUBERNETES_SERVICE_PORT_HTTPS", p},
		{"KUBERNETES_PORT", addr},
		{"KUBERNETES_PORT_" + p + "_TCP", addr},
		{"KUBERNETES_PORT_" + p + "_TCP_PROTO", "tcp"},
		{"KUBERNETES_PORT_" + p + "_TCP_PORT", p},
		{"KUBERNETES_PORT_" + p + "_TCP_ADDR", host},
	}
}

// commandLine is what a runtime executes: command (or the image entrypoint) and args
// (or the image cmd, only when the pod overrides neither), with $(VAR) expanded.
func commandLine(c *corev1.Container, img *Image, env []envVar) []string {
	m := map[string]string{}
	for _, e := range env {
		m[e.Name] = e.Value
	}
	lookup := func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	var entry, args []string
	if img != nil {
		entry, args = img.Entrypoint, img.Cmd
	}
	if len(c.Command) > 0 {
		entry, args = c.Command, nil
	}
	if len(c.Args) > 0 {
		args = c.Args
	}
	var out []string
	for _, s := range entry {
		out = append(out, expand(s, lookup))
	}
	for _, s := range args {
		out = append(out, expand(s, lookup))
	}
	return out
}

// serviceLinkEnv is the Docker-link style variables a kubelet gives a pod for each
// Service of its namespace (enableServiceLinks): NAME_SERVICE_HOST, NAME_SERVICE_PORT,
// NAME_SERVICE_PORT_PORTNAME, NAME_PORT and NAME_PORT_P_PROTO{,_PROTO,_PORT,_ADDR}.
// Headless Services and those without ports get none.
func serviceLinkEnv(services []*corev1.Service) []envVar {
	sorted := slices.Clone(services)
	slices.SortFunc(sorted, func(a, b *corev1.Service) int { return strings.Compare(a.Name, b.Name) })
	var out []envVar
	for _, s := range sorted {
		ip := s.Spec.ClusterIP
		if ip == "" || ip == corev1.ClusterIPNone || len(s.Spec.Ports) == 0 {
			continue
		}
		name := strings.ToUpper(strings.ReplaceAll(s.Name, "-", "_"))
		first := s.Spec.Ports[0]
		out = append(out, envVar{name + "_SERVICE_HOST", ip}, envVar{name + "_SERVICE_PORT", strconv.Itoa(int(first.Port))})
		for _, p := range s.Spec.Ports {
			if p.Name != "" {
				out = append(out, envVar{name + "_SERVICE_PORT_" + strings.ToUpper(strings.ReplaceAll(p.Name, "-", "_")), strconv.Itoa(int(p.Port))})
			}
		}
		url := func(p corev1.ServicePort) string {
			proto := strings.ToLower(string(p.Protocol))
			if proto == "" {
				proto = "tcp"
			}
			return fmt.Sprintf("%s://%s:%d", proto, ip, p.Port)
		}
		out = append(out, envVar{name + "_PORT", url(first)})
		for _, p := range s.Spec.Ports {
			proto := strings.ToUpper(string(p.Protocol))
			if proto == "" {
				proto = "TCP"
			}
			prefix := fmt.Sprintf("%s_PORT_%d_%s", name, p.Port, proto)
			out = append(out, envVar{prefix, url(p)}, envVar{prefix + "_PROTO", strings.ToLower(proto)},
				envVar{prefix + "_PORT", strconv.Itoa(int(p.Port))}, envVar{prefix + "_ADDR", ip})
		}
	}
	return out
}
