package sim_test

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// redirectDialer dials every address at one real host, so that a client can
// use a horizon's name (sent as TLS SNI) for a member on a test address.
type redirectDialer struct{ to string }

func (d redirectDialer) DialContext(ctx context.Context, network, _ string) (net.Conn, error) {
	var nd net.Dialer
	return nd.DialContext(ctx, network, d.to)
}

// Split horizons: accepted in the config, returned by replSetGetConfig, and
// a client that reached a member by a horizon's name (TLS SNI) is answered
// with that horizon's host names in hello.
func TestSplitHorizons(t *testing.T) {
	pemFile := serverPEM(t)
	var ms []*member
	for range 3 {
		ms = append(ms, newMember(t, "--tlsMode", "preferTLS", "--tlsCertificateKeyFile", pemFile))
	}
	ext := func(i int) string { return fmt.Sprintf("m%d.horizon.test:%d", i, 40000+i) }
	cfg := rsConfig(ms, fastSettings)
	members := cfg[1].Value.(bson.A)
	for i := range members {
		members[i] = append(members[i].(bson.D), bson.E{Key: "horizons", Value: bson.D{{Key: "external", Value: ext(i)}}})
	}
	c := ms[0].client(t)
	mustRun(t, c, bson.D{{Key: "replSetInitiate", Value: cfg}})
	p := waitPrimary(t, ms, 60*time.Second)
	got := mustRun(t, c, bson.D{{Key: "replSetGetConfig", Value: 1}})
	for i := range ms {
		h, err := got.LookupErr("config", "members", fmt.Sprint(i), "horizons", "external")
		if err != nil || h.StringValue() != ext(i) {
			t.Fatalf("replSetGetConfig member %d horizons: %v %v", i, h, err)
		}
	}
	// Through the horizon's name: hello answers with the horizon's hosts.
	hc, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + ext(p) + "/?directConnection=true&tls=true&tlsInsecure=true&serverSelectionTimeoutMS=5000").
		SetDialer(redirectDialer{to: ms[p].host}))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = hc.Disconnect(context.Background()) }()
	h := mustRun(t, hc, bson.D{{Key: "hello", Value: 1}})
	if me := h.Lookup("me").StringValue(); me != ext(p) {
		t.Errorf("hello through the horizon: me %q, want %q", me, ext(p))
	}
	if pr := h.Lookup("primary").StringValue(); pr != ext(p) {
		t.Errorf("hello through the horizon: primary %q, want %q", pr, ext(p))
	}
	hosts, _ := h.Lookup("hosts").Array().Values()
	if len(hosts) != 3 || hosts[0].StringValue() != ext(0) {
		t.Errorf("hello through the horizon: hosts %v", hosts)
	}
	// By its own address: the default horizon.
	if me := mustRun(t, c, bson.D{{Key: "hello", Value: 1}}).Lookup("me").StringValue(); me != ms[0].host {
		t.Errorf("hello by address: me %q, want %q", me, ms[0].host)
	}
}
