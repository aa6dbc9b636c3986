package actors

import (
	"fmt"
	"strings"
)

// The actions of a storage growth (decide_storage.go).
const (
	// ActExpandVolumes raises the storage request of members' data claims to
	// spec.storage.size (kube.Applier.ExpandPVCs); the StorageClass's resizer
	// then grows each volume online.
	ActExpandVolumes ActionKind = "ExpandVolumes"
	// ActReplaceStatefulSet deletes the member StatefulSet with orphan
	// propagation and creates it again with the grown claim template
	// (kube.Applier.ReplaceStatefulSet): its pods keep running and are
	// adopted, so no member restarts.
	ActReplaceStatefulSet ActionKind = "ReplaceStatefulSet"
)

// StorageGrowing records that spec.storage.size grew above the member
// StatefulSet's claim template: the claims are expanded next, then the
// StatefulSet is replaced.
type StorageGrowing struct {
	From   string   `json:"from"`
	To     string   `json:"to"`
	Claims []string `json:"claims"`
}

// VolumesExpanded records that every member's data claim (Claims; not those
// kept from members scaled away, which no pod mounts) reports the grown size
// as its capacity (status.capacity): the resizer finished.
type VolumesExpanded struct {
	Size   string   `json:"size"`
	Claims []string `json:"claims"`
}

// StorageGrown records that the member StatefulSet's claim template asks for
// Size: the growth is over, and later template changes apply in place again.
type StorageGrown struct {
	Size        string `json:"size"`
	StatefulSet string `json:"statefulSet"`
}

// StorageGrowthRefused records that spec.storage.size grew and the claims'
// StorageClass does not allow volume expansion: nothing is changed or deleted.
type StorageGrowthRefused struct {
	Size   string `json:"size"`
	Class  string `json:"class"`
	Reason string `json:"reason"`
}

func (StorageGrowing) Type() string       { return "StorageGrowing" }
func (VolumesExpanded) Type() string      { return "VolumesExpanded" }
func (StorageGrown) Type() string         { return "StorageGrown" }
func (StorageGrowthRefused) Type() string { return "StorageGrowthRefused" }

func init() {
	register(StorageGrowing{})
	register(VolumesExpanded{})
	register(StorageGrown{})
	register(StorageGrowthRefused{})
}

// storageAnnouncement is the Kubernetes Event of a storage event: reason,
// message, and whether it is a Warning.
func storageAnnouncement(e Event) (reason, message string, warning, ok bool) {
	switch e := e.(type) {
	case StorageGrowing:
		return e.Type(), fmt.Sprintf("spec.storage.size grew from %s to %s: expanding %s, then replacing the StatefulSet (pods orphaned and adopted, not restarted)",
			e.From, e.To, strings.Join(e.Claims, ", ")), false, true
	case VolumesExpanded:
		return e.Type(), fmt.Sprintf("%s have a capacity of %s", strings.Join(e.Claims, ", "), e.Size), false, true
	case StorageGrown:
		return e.Type(), fmt.Sprintf("StatefulSet %s asks %s for each member's volume", e.StatefulSet, e.Size), false, true
	case StorageGrowthRefused:
		return e.Type(), e.Reason, true, true
	}
	return "", "", false, false
}
