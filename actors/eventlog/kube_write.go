package eventlog

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// segmentWriter creates and extends segment ConfigMaps and returns the
// resourceVersion the API server gave them.
type segmentWriter interface {
	create(ctx context.Context, cm *corev1.ConfigMap) (string, error)
	// patch applies a JSON merge patch to the named ConfigMap.
	patch(ctx context.Context, namespace, name string, body []byte) (string, error)
}

// metadataOnly asks the API server to answer a write with the object's
// metadata (PartialObjectMetadata) instead of the whole object.
const metadataOnly = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"

// restWriter writes through the clientset's REST client and reads back
// metadata only: an append to a full segment neither receives nor decodes the
// segment.
type restWriter struct {
	client *rest.RESTClient
}

func (w restWriter) create(ctx context.Context, cm *corev1.ConfigMap) (string, error) {
	cm = cm.DeepCopy()
	cm.APIVersion, cm.Kind = "v1", "ConfigMap"
	body, err := json.Marshal(cm)
	if err != nil {
		return "", fmt.Errorf("encoding %s: %w", cm.Name, err)
	}
	raw, err := w.client.Post().Namespace(cm.Namespace).Resource("configmaps").
		SetHeader("Content-Type", "application/json").SetHeader("Accept", metadataOnly).
		Body(body).DoRaw(ctx)
	if err != nil {
		return "", err
	}
	return resourceVersionOf(raw)
}

func (w restWriter) patch(ctx context.Context, namespace, name string, body []byte) (string, error) {
	raw, err := w.client.Patch(types.MergePatchType).Namespace(namespace).Resource("configmaps").Name(name).
		SetHeader("Accept", metadataOnly).Body(body).DoRaw(ctx)
	if err != nil {
		return "", err
	}
	return resourceVersionOf(raw)
}

// resourceVersionOf reads the resourceVersion from a write's answer.
func resourceVersionOf(raw []byte) (string, error) {
	var m metav1.PartialObjectMetadata
	if err := json.Unmarshal(raw, &m); err != nil {
		return "", fmt.Errorf("decoding the API server's answer: %w", err)
	}
	if m.ResourceVersion == "" {
		return "", fmt.Errorf("the API server's answer has no resourceVersion (kind %q)", m.Kind)
	}
	return m.ResourceVersion, nil
}

// typedWriter writes through the typed client, for clientsets without a REST
// client (client-go's fake).
type typedWriter struct {
	client kubernetes.Interface
}

func (w typedWriter) create(ctx context.Context, cm *corev1.ConfigMap) (string, error) {
	created, err := w.client.CoreV1().ConfigMaps(cm.Namespace).Create(ctx, cm, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	return created.ResourceVersion, nil
}

func (w typedWriter) patch(ctx context.Context, namespace, name string, body []byte) (string, error) {
	patched, err := w.client.CoreV1().ConfigMaps(namespace).Patch(ctx, name, types.MergePatchType, body, metav1.PatchOptions{})
	if err != nil {
		return "", err
	}
	return patched.ResourceVersion, nil
}

// chunkKey is a chunk's data key: the seq of its first record, zero-padded
// to the width of the largest int64, so the keys sort in seq order.
func chunkKey(first int64) string { return fmt.Sprintf("%019d", first) }

// chunkSeq reads a chunk key back; ok is false for any other key.
func chunkSeq(key string) (int64, bool) {
	if len(key) != 19 {
		return 0, false
	}
	n, err := strconv.ParseInt(key, 10, 64)
	return n, err == nil && n > 0
}

// dataSize is what a segment's data counts against SegmentBytes.
func dataSize(data map[string]string) int {
	n := 0
	for key, value := range data {
		n += len(key) + len(value)
	}
	return n
}

// appendPatch is the merge patch of an append: the chunk it writes, the
// last-seq annotation, and the resourceVersion the segment must still have
// (the API server answers 409 Conflict when another writer moved it).
func appendPatch(resourceVersion string, last int64, key, value string) ([]byte, error) {
	type meta struct {
		ResourceVersion string            `json:"resourceVersion"`
		Annotations     map[string]string `json:"annotations"`
	}
	body, err := json.Marshal(struct {
		Metadata meta              `json:"metadata"`
		Data     map[string]string `json:"data"`
	}{meta{resourceVersion, map[string]string{annotationLast: strconv.FormatInt(last, 10)}}, map[string]string{key: value}})
	if err != nil {
		return nil, fmt.Errorf("eventlog: encoding an append: %w", err)
	}
	return body, nil
}
