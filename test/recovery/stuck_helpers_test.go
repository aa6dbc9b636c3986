package recovery

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/mgors/operator/kube"
	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/test/chaos"
	"github.com/mgors/operator/test/localkube/cluster"
)

// wipeVolume deletes a member's claim, then its pod, each bound to the UID
// just read (the order of kube.Applier.WipeMember: the claim waits for the
// pod to go, and the StatefulSet then creates a new claim and pod). It
// returns the old UIDs.
func wipeVolume(ctx context.Context, s *chaos.Scene, ns, pod string) (podUID, pvcUID string, err error) {
	gctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	claim := kube.DataVolume + "-" + pod
	pvc, err := s.Kube().CoreV1().PersistentVolumeClaims(ns).Get(gctx, claim, metav1.GetOptions{})
	if err != nil {
		return "", "", err
	}
	p, err := s.Kube().CoreV1().Pods(ns).Get(gctx, pod, metav1.GetOptions{})
	if err != nil {
		return "", "", err
	}
	if err := s.Kube().CoreV1().PersistentVolumeClaims(ns).Delete(gctx, claim,
		metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pvc.UID}}); err != nil {
		return "", "", fmt.Errorf("deleting claim %s: %w", claim, err)
	}
	if err := s.Kube().CoreV1().Pods(ns).Delete(gctx, pod,
		metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &p.UID}}); err != nil {
		return "", "", fmt.Errorf("deleting pod %s: %w", pod, err)
	}
	return string(p.UID), string(pvc.UID), nil
}

// replaced says whether the pod and its claim were recreated (new UIDs) and
// the pod runs.
func replaced(ctx context.Context, s *chaos.Scene, ns, pod, oldPod, oldPVC string) bool {
	p, err := getPod(ctx, s, ns, pod)
	if err != nil || string(p.UID) == oldPod || p.Status.Phase != "Running" {
		return false
	}
	uid, err := pvcUID(ctx, s, ns, kube.DataVolume+"-"+pod)
	return err == nil && uid != oldPVC
}

func pvcUID(ctx context.Context, s *chaos.Scene, ns, name string) (string, error) {
	gctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	pvc, err := s.Kube().CoreV1().PersistentVolumeClaims(ns).Get(gctx, name, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	if pvc.DeletionTimestamp != nil {
		return "", fmt.Errorf("claim %s is being deleted", name)
	}
	return string(pvc.UID), nil
}

// scale sets spec.members, as a person does.
func scale(ctx context.Context, s *chaos.Scene, c chaos.ClusterRef, members int32) error {
	gctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	patch := fmt.Sprintf(`{"spec":{"members":%d}}`, members)
	_, err := s.Mgors().Mgorses(c.Namespace).Patch(gctx, c.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	return err
}

// filler writes padding documents (w:majority, a database of its own) to
// roll the primary's oplog.
type filler struct{ c *mongo.Client }

func newFiller(ctx context.Context, s *chaos.Scene, c chaos.ClusterRef) (*filler, error) {
	gctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	m, err := s.Mgors().Mgorses(c.Namespace).Get(gctx, c.Name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	sec, err := s.Kube().CoreV1().Secrets(c.Namespace).Get(gctx, m.AdminSecretName(), metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	o := options.Client().ApplyURI(m.Status.ConnectionString).SetAppName("mgors-stuck-filler").
		SetAuth(options.Credential{AuthSource: "admin", Username: string(sec.Data[v1alpha1.AdminUsernameSecretKey]),
			Password: string(sec.Data[v1alpha1.AdminPasswordSecretKey])}).
		SetDialer(dialer()).SetServerSelectionTimeout(10 * time.Second).SetWriteConcern(writeconcern.Majority())
	cl, err := mongo.Connect(o)
	if err != nil {
		return nil, err
	}
	return &filler{c: cl}, nil
}

func (f *filler) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = f.c.Disconnect(ctx)
}

// lastWrite is the primary's last write (hello's lastWrite).
func (f *filler) lastWrite(ctx context.Context) (bson.Timestamp, error) {
	gctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var hello struct {
		LastWrite struct {
			OpTime struct {
				TS bson.Timestamp `bson:"ts"`
			} `bson:"opTime"`
		} `bson:"lastWrite"`
	}
	err := f.c.Database("admin").RunCommand(gctx, bson.D{{Key: "hello", Value: 1}}).Decode(&hello)
	return hello.LastWrite.OpTime.TS, err
}

// oldestOplog is the timestamp of the primary's oldest oplog entry.
func (f *filler) oldestOplog(ctx context.Context) (bson.Timestamp, error) {
	gctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var e struct {
		TS bson.Timestamp `bson:"ts"`
	}
	err := f.c.Database("local").Collection("oplog.rs").FindOne(gctx, bson.D{}).Decode(&e)
	return e.TS, err
}

// rollPast inserts batches of padding until the primary's oldest oplog
// entry is past ts (at most 400 batches of 50 documents of 4 KB, 80 MB); it
// returns that entry's timestamp and the documents written.
func (f *filler) rollPast(ctx context.Context, ts bson.Timestamp) (bson.Timestamp, int, error) {
	pad := strings.Repeat("x", 4096)
	coll := f.c.Database("stuckfill").Collection("pad")
	n := 0
	for batch := 0; batch < 400 && ctx.Err() == nil; batch++ {
		oldest, err := f.oldestOplog(ctx)
		if err != nil {
			return oldest, n, fmt.Errorf("reading the oldest oplog entry: %w", err)
		}
		if oldest.After(ts) {
			return oldest, n, nil
		}
		docs := make([]any, 50)
		for i := range docs {
			docs[i] = bson.D{{Key: "n", Value: n + i}, {Key: "pad", Value: pad}}
		}
		gctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		_, err = coll.InsertMany(gctx, docs)
		cancel()
		if err != nil {
			return oldest, n, fmt.Errorf("writing padding: %w", err)
		}
		n += len(docs)
	}
	oldest, err := f.oldestOplog(ctx)
	if err == nil {
		err = fmt.Errorf("the oldest oplog entry %v is not past %v after %d documents", oldest, ts, n)
	}
	return oldest, n, err
}

// dialer resolves the members' names through the cluster's CoreDNS, as the
// chaos workload does.
func dialer() *net.Dialer {
	return &net.Dialer{Resolver: cluster.Resolver(), Timeout: 3 * time.Second}
}
