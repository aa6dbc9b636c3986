package mongotest

import (
	"context"
	"fmt"
	"slices"

	"github.com/mgors/operator/mongo"
)

// DefaultOplogMB is the oplog size of a member no ResizeOplog or
// SetOplogSize changed.
const DefaultOplogMB = 990

// SetParameter sets a member's parameter as --setParameter would at its
// start (value as text).
func (r *ReplicaSet) SetParameter(host, name, value string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.setParamLocked(mongo.NormalizeHost(host), name, value)
}

func (r *ReplicaSet) setParamLocked(host, name, value string) {
	if r.params == nil {
		r.params = map[string]map[string]string{}
	}
	if r.params[host] == nil {
		r.params[host] = map[string]string{}
	}
	r.params[host][name] = value
}

// Parameter is a member's parameter as text ("" when never set).
func (r *ReplicaSet) Parameter(host, name string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.params[mongo.NormalizeHost(host)][name]
}

// Parameters implements mongo.Admin: the parameters set on host; a name
// never set is absent.
func (r *ReplicaSet) Parameters(ctx context.Context, host string, names []string) (map[string]string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n, err := r.begin(ctx, host, "getParameter")
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, name := range names {
		if v, ok := r.params[n.host][name]; ok {
			out[name] = v
		}
	}
	return out, nil
}

// SetParameters implements mongo.Admin.
func (r *ReplicaSet) SetParameters(ctx context.Context, host string, values map[string]any) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	n, err := r.begin(ctx, host, "setParameter")
	if err != nil {
		return err
	}
	for name, v := range values {
		r.setParamLocked(n.host, name, fmt.Sprint(v))
	}
	return nil
}

// OplogSizeMB implements mongo.Admin.
func (r *ReplicaSet) OplogSizeMB(ctx context.Context, host string) (int64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n, err := r.begin(ctx, host, "collStats")
	if err != nil {
		return 0, err
	}
	if mb, ok := r.oplogMB[n.host]; ok {
		return mb, nil
	}
	return DefaultOplogMB, nil
}

// ResizeOplog implements mongo.Admin: at least 990 MB, as mongod.
func (r *ReplicaSet) ResizeOplog(ctx context.Context, host string, sizeMB int64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	n, err := r.begin(ctx, host, "replSetResizeOplog")
	if err != nil {
		return err
	}
	if sizeMB < 990 {
		return serverErr(n.host, 51024, "Location51024", "BSON field 'size' value must be >= 990, actual value '%d'", sizeMB)
	}
	if r.oplogMB == nil {
		r.oplogMB = map[string]int64{}
	}
	r.oplogMB[n.host] = sizeMB
	return nil
}

// GrantConfigRole implements mongo.Admin: on the primary, to a user that
// exists.
func (r *ReplicaSet) GrantConfigRole(ctx context.Context, host, name string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	n, err := r.userWrite(ctx, host, "grantRolesToUser")
	if err != nil {
		return err
	}
	u, ok := r.users[name]
	if !ok {
		return serverErr(n.host, mongo.CodeUserNotFound, "UserNotFound", "Could not find user \"%s\" for db \"admin\"", name)
	}
	role := mongo.Role{Role: mongo.ConfigRole, DB: "admin"}
	if !slices.Contains(u.roles, role) {
		u.roles = append(u.roles, role)
	}
	r.users[name] = u
	r.wrote(n)
	return nil
}
