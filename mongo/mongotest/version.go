package mongotest

import (
	"context"

	"github.com/mgors/operator/mongo"
)

// DefaultVersion is the binary version of a member no SetVersion named.
const DefaultVersion = "7.0.14"

// SetVersion makes host run the binary version (its pod restarted on a new
// image). The set's FCV stays what it was, as mongod keeps it in its data.
func (r *ReplicaSet) SetVersion(host, version string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.versions == nil {
		r.versions = map[string]string{}
	}
	r.versions[mongo.NormalizeHost(host)] = version
}

// FCV is the set's featureCompatibilityVersion ("" before initiate).
func (r *ReplicaSet) FCV() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.fcv
}

func (r *ReplicaSet) versionOf(host string) string {
	if v, ok := r.versions[mongo.NormalizeHost(host)]; ok {
		return v
	}
	return DefaultVersion
}

// ServerVersion implements mongo.Admin.
func (r *ReplicaSet) ServerVersion(ctx context.Context, host string) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n, err := r.begin(ctx, host, "buildInfo")
	if err != nil {
		return "", err
	}
	return r.versionOf(n.host), nil
}

// FeatureCompatibilityVersion implements mongo.Admin: the set's FCV, or
// the binary's line on a member without a config.
func (r *ReplicaSet) FeatureCompatibilityVersion(ctx context.Context, host string) (mongo.FCV, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n, err := r.begin(ctx, host, "getParameter")
	if err != nil {
		return mongo.FCV{}, err
	}
	if n.config == nil || r.fcv == "" {
		return mongo.FCV{Version: mongo.Line(r.versionOf(n.host))}, nil
	}
	return mongo.FCV{Version: r.fcv}, nil
}

// SetFeatureCompatibilityVersion implements mongo.Admin: on the primary,
// to its binary's line or the one before, as mongod.
func (r *ReplicaSet) SetFeatureCompatibilityVersion(ctx context.Context, host, version string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	n, err := r.begin(ctx, host, "setFeatureCompatibilityVersion")
	if err != nil {
		return err
	}
	if n.state != mongo.StatePrimary {
		return serverErr(n.host, mongo.CodeNotWritablePrimary, "NotWritablePrimary", "not primary")
	}
	line := mongo.Line(r.versionOf(n.host))
	if version != line {
		if ok, _ := mongo.BinaryAllowed(r.versionOf(n.host), version); !ok {
			return serverErr(n.host, 2, "BadValue", "Invalid feature compatibility version value '%s'", version)
		}
	}
	r.fcv = version
	return nil
}
