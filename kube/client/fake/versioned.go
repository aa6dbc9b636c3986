package fake

import (
	"encoding/json"
	"errors"
	"strconv"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// Versioned makes c's objects of resource (e.g. "configmaps", "leases")
// behave as the API server's do: every write gets a new resourceVersion, and
// an update or a merge patch carrying a stale one is a 409 Conflict. (The
// tracker alone neither checks nor moves resourceVersions; that the real API
// server does, test/e2e TestEventLogOnTheAPIServer shows.)
func Versioned(c *k8sfake.Clientset, resource string) *k8sfake.Clientset {
	var mu sync.Mutex
	var rv int64
	next := func(o metav1.Object) {
		rv++
		o.SetResourceVersion(strconv.FormatInt(rv, 10))
	}
	stale := func(a k8stesting.Action, name, want string) error {
		stored, err := c.Tracker().Get(a.GetResource(), a.GetNamespace(), name)
		if err != nil {
			return err
		}
		if want != "" && want != stored.(metav1.Object).GetResourceVersion() {
			return apierrors.NewConflict(a.GetResource().GroupResource(), name, errors.New("stale resourceVersion"))
		}
		return nil
	}
	c.PrependReactor("*", resource, func(a k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		// Create and update actions share one method set: tell them by verb.
		switch a.GetVerb() {
		case "create":
			next(a.(k8stesting.CreateAction).GetObject().(metav1.Object))
		case "update":
			obj := a.(k8stesting.UpdateAction).GetObject().(metav1.Object)
			if err := stale(a, obj.GetName(), obj.GetResourceVersion()); err != nil {
				return true, nil, err
			}
			next(obj)
		case "patch":
			pa := a.(k8stesting.PatchAction)
			var p struct {
				Metadata metav1.ObjectMeta `json:"metadata"`
			}
			if err := json.Unmarshal(pa.GetPatch(), &p); err != nil {
				return true, nil, apierrors.NewBadRequest(err.Error())
			}
			if err := stale(a, pa.GetName(), p.Metadata.ResourceVersion); err != nil {
				return true, nil, err
			}
			_, obj, err := k8stesting.ObjectReaction(c.Tracker())(a)
			if err != nil {
				return true, nil, err
			}
			next(obj.(metav1.Object))
			if err := c.Tracker().Update(a.GetResource(), obj, a.GetNamespace()); err != nil {
				return true, nil, err
			}
			return true, obj, nil
		}
		return false, nil, nil
	})
	return c
}
