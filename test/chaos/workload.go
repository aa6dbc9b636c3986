package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readconcern"
	"go.mongodb.org/mongo-driver/v2/mongo/readpref"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/topology"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mgors/operator/kube"
	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/test/localkube/cluster"
)

// The workload's database, collections and registers.
const (
	database     = "chaos"
	setColl      = "set"
	registerColl = "registers"
	// opTimeout bounds every operation of the workload.
	opTimeout = 5 * time.Second
	// opInterval is each client's pause between operations: 6 clients per
	// cluster at about 5 ops/s each.
	opInterval = 150 * time.Millisecond
)

// registers are the keys of the register workload.
var registers = []string{"r0", "r1", "r2"}

// target is one Mgors of the run as its clients know it.
type target struct {
	key, ns, name string
	// uri is status.connectionString: the members' DNS names and the replica set.
	uri            string
	user, password string
	// hosts are the voting members' host:port (data members, then arbiters) and
	// arbiter marks the arbiters among them.
	hosts   []string
	arbiter map[string]bool
	// trust is the CAs its clients verify the members against (tls.go); nil
	// without spec.tls, when they connect without TLS.
	trust *trust
	// ids and values hand out the unique inserted ids and register values.
	ids, values atomic.Int64
}

// newTarget reads what a client needs from the Healthy Mgors: its connection
// string and its admin Secret.
func (r *run) newTarget(ctx context.Context, m *v1alpha1.Mgors) (*target, error) {
	gctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	s, err := r.kube.CoreV1().Secrets(m.Namespace).Get(gctx, m.AdminSecretName(), metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("admin Secret of %s/%s: %w", m.Namespace, m.Name, err)
	}
	t := &target{key: m.Namespace + "/" + m.Name, ns: m.Namespace, name: m.Name, uri: m.Status.ConnectionString,
		user:     string(s.Data[v1alpha1.AdminUsernameSecretKey]),
		password: string(s.Data[v1alpha1.AdminPasswordSecretKey]), arbiter: map[string]bool{}}
	for i := range m.Spec.Members {
		t.hosts = append(t.hosts, m.MemberHost(i, "cluster.local"))
	}
	for i := range m.Spec.Arbiters {
		h := kube.ArbiterHost(m, i, "cluster.local")
		t.hosts, t.arbiter[h] = append(t.hosts, h), true
	}
	if t.trust, err = r.newTrust(ctx, m); err != nil {
		return nil, err
	}
	return t, nil
}

// dialer resolves the members' names through the cluster's CoreDNS, as a pod does.
func dialer() *net.Dialer {
	return &net.Dialer{Resolver: cluster.Resolver(), Timeout: 3 * time.Second, KeepAlive: 30 * time.Second}
}

// appClient connects as an application in the cluster would: the seed list and
// replica set of the connection string, the admin credentials, retryable writes
// and reads on (the driver's defaults); TLS when the Mgors has spec.tls.
func (t *target) appClient() (*mongo.Client, error) {
	u, err := url.Parse(t.uri)
	if err != nil {
		return nil, fmt.Errorf("connection string of %s: %w", t.key, err)
	}
	if u.Query().Get("replicaSet") == "" {
		return nil, fmt.Errorf("connection string of %s names no replica set: %s", t.key, t.uri)
	}
	o := options.Client().ApplyURI(t.uri).SetAppName("mgors-chaos").
		SetAuth(options.Credential{AuthSource: "admin", Username: t.user, Password: t.password}).
		SetDialer(dialer()).SetServerSelectionTimeout(opTimeout).SetConnectTimeout(3 * time.Second).
		SetWriteConcern(writeconcern.Majority()).SetReadPreference(readpref.Primary())
	if t.trust != nil {
		o.SetTLSConfig(t.trust.config())
	}
	return mongo.Connect(o)
}

// startWorkload starts the clients of one cluster: 2 inserters, 2 register
// writers, a linearizable and a majority reader.
func (r *run) startWorkload(ctx context.Context, t *target, wg *sync.WaitGroup) error {
	workers := []workerFunc{r.inserter(t), r.inserter(t), r.writer(t), r.writer(t), r.reader(t, "linearizable"), r.reader(t, "majority")}
	for i, w := range workers {
		c, err := t.appClient()
		if err != nil {
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				dctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				_ = c.Disconnect(dctx)
			}()
			rng := rand.New(rand.NewPCG(uint64(i), uint64(len(t.key)))) //nolint:gosec // which register, not a secret
			for ctx.Err() == nil {
				w(ctx, c, i, rng)
				sleep(ctx, opInterval)
			}
		}()
	}
	return nil
}

// workerFunc does one operation of a client.
type workerFunc = func(ctx context.Context, c *mongo.Client, client int, rng *rand.Rand)

// inserter inserts documents with unique ids, w:majority.
func (r *run) inserter(t *target) workerFunc {
	return func(ctx context.Context, c *mongo.Client, client int, _ *rand.Rand) {
		id := t.ids.Add(1)
		op := Op{Cluster: t.key, Client: client, Kind: Insert, Value: id, Start: time.Now()}
		octx, cancel := context.WithTimeout(ctx, opTimeout)
		_, err := c.Database(database).Collection(setColl).InsertOne(octx, bson.D{{Key: "_id", Value: id}})
		cancel()
		r.finish(op, err)
	}
}

// writer sets a register to a value no other write of the cluster uses,
// w:majority (an upsert, so the first write creates it).
func (r *run) writer(t *target) workerFunc {
	return func(ctx context.Context, c *mongo.Client, client int, rng *rand.Rand) {
		key, v := registers[rng.IntN(len(registers))], t.values.Add(1)
		op := Op{Cluster: t.key, Client: client, Kind: Write, Key: key, Value: v, Start: time.Now()}
		octx, cancel := context.WithTimeout(ctx, opTimeout)
		_, err := c.Database(database).Collection(registerColl).UpdateOne(octx, bson.D{{Key: "_id", Value: key}},
			bson.D{{Key: "$set", Value: bson.D{{Key: "v", Value: v}}}}, options.UpdateOne().SetUpsert(true))
		cancel()
		r.finish(op, err)
	}
}

// reader reads a register from the primary with the read concern given.
func (r *run) reader(t *target, concern string) workerFunc {
	rc := readconcern.Majority()
	if concern == "linearizable" {
		rc = readconcern.Linearizable()
	}
	return func(ctx context.Context, c *mongo.Client, client int, rng *rand.Rand) {
		key := registers[rng.IntN(len(registers))]
		op := Op{Cluster: t.key, Client: client, Kind: Read, Key: key, Concern: concern, Start: time.Now()}
		octx, cancel := context.WithTimeout(ctx, opTimeout)
		var doc struct {
			V int64 `bson:"v"`
		}
		coll := c.Database(database).Collection(registerColl, options.Collection().SetReadConcern(rc))
		err := coll.FindOne(octx, bson.D{{Key: "_id", Value: key}}).Decode(&doc)
		cancel()
		if errors.Is(err, mongo.ErrNoDocuments) {
			err = nil // the register does not exist yet: value 0
		}
		op.Value = doc.V
		if err != nil {
			op.Value = 0
		}
		r.finish(op, err)
	}
}

// finish records an operation with its outcome. An operation cut short because
// the run itself ended is recorded too (a write as unknown).
func (r *run) finish(op Op, err error) {
	op.End = time.Now()
	op.Outcome = classify(op.Kind, err)
	if err != nil {
		op.Error = err.Error()
	}
	r.rec.op(op)
}

// classify decides an operation's outcome from the driver's error.
//
// A read that failed changed nothing: Failed. A write is Failed only when the
// driver proves nothing was sent: server selection failed (with retryable
// writes, a retry whose server selection fails returns the first attempt's
// error instead, so a ServerSelectionError here means no attempt left the
// client). Every other error of a write is Unknown: a write concern error, a
// timeout, a network error after sending, and also a NotWritablePrimary or a
// duplicate key, because with retries the error comes from the last attempt
// while an earlier one may have applied the write.
func classify(kind OpKind, err error) Outcome {
	if err == nil {
		return OK
	}
	if kind == Read {
		return Failed
	}
	var sel topology.ServerSelectionError
	if errors.As(err, &sel) {
		return Failed
	}
	return Unknown
}
