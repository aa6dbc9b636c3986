package kube

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/mgors/operator/kube/api/v1alpha1"
)

func memberPod(m *v1alpha1.Mgors, ordinal int32) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: m.PodName(ordinal), Namespace: m.Namespace, UID: "pod-uid",
			Labels: Labels(m, ComponentMember)},
		Spec: corev1.PodSpec{Volumes: []corev1.Volume{{Name: DataVolume, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: PVCName(m, ordinal)}}}}},
	}
}

func boundPVC(m *v1alpha1.Mgors, ordinal int32, volume string) *corev1.PersistentVolumeClaim {
	p := pvc(m, ordinal, "10Gi", true)
	p.Spec.VolumeName = volume
	return p
}

func volume(name string, policy corev1.PersistentVolumeReclaimPolicy) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{PersistentVolumeReclaimPolicy: policy}}
}

// writeLog is the writes of c in order, as "verb resource/name".
func writeLog(c *fake.Clientset) []string {
	var out []string
	for _, a := range c.Actions() {
		switch act := a.(type) {
		case k8stesting.DeleteAction:
			out = append(out, "delete "+a.GetResource().Resource+"/"+act.GetName())
		case k8stesting.PatchAction:
			out = append(out, "patch "+a.GetResource().Resource+"/"+act.GetName())
		case k8stesting.CreateAction, k8stesting.UpdateAction:
			out = append(out, a.GetVerb()+" "+a.GetResource().Resource)
		}
	}
	return out
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestWipeMemberRetainKeepsTheVolumeThenClaimThenPod(t *testing.T) {
	ctx := context.Background()
	m := sample() // reclaim Retain
	c := fake.NewClientset(memberPod(m, 1), boundPVC(m, 1, "pv-1"), volume("pv-1", corev1.PersistentVolumeReclaimDelete),
		memberPod(m, 0), boundPVC(m, 0, "pv-0"), volume("pv-0", corev1.PersistentVolumeReclaimDelete))
	if err := NewApplier(c).WipeMember(ctx, m, m.PodName(1)); err != nil {
		t.Fatal(err)
	}
	want := []string{"patch persistentvolumes/pv-1", "delete persistentvolumeclaims/" + PVCName(m, 1), "delete pods/" + m.PodName(1)}
	if got := writeLog(c); !equal(got, want) {
		t.Errorf("writes %v, want %v", got, want)
	}
	pv, _ := c.CoreV1().PersistentVolumes().Get(ctx, "pv-1", metav1.GetOptions{})
	if pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimRetain {
		t.Errorf("pv-1 reclaim %s, want Retain", pv.Spec.PersistentVolumeReclaimPolicy)
	}
	for _, name := range []string{m.PodName(0)} {
		if _, err := c.CoreV1().Pods(m.Namespace).Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("another member's pod touched: %v", err)
		}
	}
	if _, err := c.CoreV1().PersistentVolumeClaims(m.Namespace).Get(ctx, PVCName(m, 0), metav1.GetOptions{}); err != nil {
		t.Errorf("another member's claim touched: %v", err)
	}
}

func TestWipeMemberDeleteLeavesTheVolumeToItsClass(t *testing.T) {
	m := sample(func(m *v1alpha1.Mgors) { m.Spec.Storage.Reclaim = v1alpha1.VolumeDelete })
	c := fake.NewClientset(memberPod(m, 2), boundPVC(m, 2, "pv-2"), volume("pv-2", corev1.PersistentVolumeReclaimDelete))
	if err := NewApplier(c).WipeMember(context.Background(), m, m.PodName(2)); err != nil {
		t.Fatal(err)
	}
	want := []string{"delete persistentvolumeclaims/" + PVCName(m, 2), "delete pods/" + m.PodName(2)}
	if got := writeLog(c); !equal(got, want) {
		t.Errorf("writes %v, want %v", got, want)
	}
}

func TestWipeMemberRetriedDeletesOnlyThePod(t *testing.T) {
	m := sample()
	claim := boundPVC(m, 1, "pv-1")
	now := metav1.Now()
	claim.DeletionTimestamp = &now
	claim.Finalizers = []string{"kubernetes.io/pvc-protection"}
	c := fake.NewClientset(memberPod(m, 1), claim, volume("pv-1", corev1.PersistentVolumeReclaimRetain))
	if err := NewApplier(c).WipeMember(context.Background(), m, m.PodName(1)); err != nil {
		t.Fatal(err)
	}
	if got, want := writeLog(c), []string{"delete pods/" + m.PodName(1)}; !equal(got, want) {
		t.Errorf("writes %v, want %v", got, want)
	}
}

func TestWipeMemberRefusesWhatIsNotTheMembers(t *testing.T) {
	ctx := context.Background()
	m := sample()
	foreign := memberPod(m, 1)
	foreign.Labels = map[string]string{"app": "other"}
	c := fake.NewClientset(foreign, boundPVC(m, 1, "pv-1"))
	var notOwned *NotOwned
	if err := NewApplier(c).WipeMember(ctx, m, m.PodName(1)); !errors.As(err, &notOwned) {
		t.Errorf("foreign pod: err = %v, want NotOwned", err)
	}
	unlabelled := pvc(m, 1, "10Gi", false)
	c2 := fake.NewClientset(memberPod(m, 1), unlabelled)
	if err := NewApplier(c2).WipeMember(ctx, m, m.PodName(1)); !errors.As(err, &notOwned) {
		t.Errorf("foreign claim: err = %v, want NotOwned", err)
	}
	if err := NewApplier(fake.NewClientset()).WipeMember(ctx, m, m.PodName(1)); err == nil {
		t.Error("a missing pod: no error")
	}
	for _, cs := range []*fake.Clientset{c, c2} {
		if got := writeLog(cs); len(got) != 0 {
			t.Errorf("writes on refusal: %v", got)
		}
	}
}
