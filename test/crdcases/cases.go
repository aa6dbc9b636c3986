// Package crdcases is the table of invalid Mgors objects that the API server must
// reject, each with the field and the rule its error has to name. The same table is
// checked client-side against the generated schema (kube/api/v1alpha1) and against a
// real API server (test/e2e), so the two can never drift apart.
package crdcases

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"
)

// Case is one invalid input.
type Case struct {
	// Name says what is wrong.
	Name string
	// Update is true when the case is an update of Valid, false for a create.
	Update bool
	// Patch is YAML merged over Valid (maps merge, everything else replaces) to
	// make the object the user sends.
	Patch string
	// Field is the field path the error must name.
	Field string
	// Rule is a part of the error that states the rule that was broken.
	Rule string
}

// Valid is a minimal valid Mgors, the base most cases change one thing of.
const Valid = `apiVersion: mgors.io/v1alpha1
kind: Mgors
metadata:
  name: demo
  namespace: default
spec:
  members: 3
  version: "7.0.14"
  replicaSetName: rs0
  storage:
    size: 1Gi
    storageClassName: standard
`

// Invalid is the table of inputs the API server must reject.
var Invalid = []Case{
	{
		Name:  "zero members",
		Patch: `spec: {members: 0}`,
		Field: "spec.members",
		Rule:  "should be greater than or equal to 1",
	},
	{
		Name:  "51 members",
		Patch: `spec: {members: 51}`,
		Field: "spec.members",
		Rule:  "should be less than or equal to 50",
	},
	{
		Name:  "unparsable version",
		Patch: `spec: {version: "seven"}`,
		Field: "spec.version",
		Rule:  "spec.version must be a MongoDB version",
	},
	{
		Name:  "unsupported major version",
		Patch: `spec: {version: "3.6.8"}`,
		Field: "spec.version",
		Rule:  "with major 5 to 8",
	},
	{
		Name:  "zero storage size",
		Patch: `spec: {storage: {size: "0"}}`,
		Field: "spec.storage",
		Rule:  "spec.storage.size must be a positive quantity",
	},
	{
		Name:  "negative storage size",
		Patch: `spec: {storage: {size: "-1Gi"}}`,
		Field: "spec.storage",
		Rule:  "spec.storage.size must be a positive quantity",
	},
	{
		Name:  "unparsable storage size",
		Patch: `spec: {storage: {size: "lots"}}`,
		Field: "spec.storage.size",
		Rule:  "should match",
	},
	{
		Name:  "unknown reclaim policy",
		Patch: `spec: {storage: {reclaim: Wipe}}`,
		Field: "spec.storage.reclaim",
		Rule:  `supported values: "Retain", "Delete"`,
	},
	{
		Name:  "zero oplog size",
		Patch: `spec: {storage: {oplogSizeMB: 0}}`,
		Field: "spec.storage.oplogSizeMB",
		Rule:  "should be greater than or equal to 1",
	},
	{
		Name:  "oplog size not a number",
		Patch: `spec: {storage: {oplogSizeMB: "1Gi"}}`,
		Field: "spec.storage.oplogSizeMB",
		Rule:  "must be of type integer",
	},
	{
		Name:   "replica set renamed",
		Update: true,
		Patch:  `spec: {replicaSetName: rs1}`,
		Field:  "spec",
		Rule:   "spec.replicaSetName is immutable",
	},
	{
		Name:   "storage class changed",
		Update: true,
		Patch:  `spec: {storage: {storageClassName: fast}}`,
		Field:  "spec.storage",
		Rule:   "spec.storage.storageClassName is immutable",
	},
	{
		Name:   "storage shrunk",
		Update: true,
		Patch:  `spec: {storage: {size: 512Mi}}`,
		Field:  "spec.storage",
		Rule:   "spec.storage.size cannot shrink",
	},
	{
		Name:  "unparsable arbiter memory",
		Patch: `spec: {arbiters: 1, arbiterResources: {requests: {memory: lots}}}`,
		Field: "spec.arbiterResources.requests.memory",
		Rule:  "should match",
	},
	{
		Name:  "hidden member with a priority",
		Patch: `spec: {memberOptions: [{ordinal: 2, hidden: true, priority: 1}]}`,
		Field: "spec.memberOptions[0]",
		Rule:  "priority must be 0 when hidden is true",
	},
	{
		Name:  "non-voting member with a priority",
		Patch: `spec: {memberOptions: [{ordinal: 1, votes: 0}]}`,
		Field: "spec.memberOptions[0]",
		Rule:  "priority must be 0 when votes is 0",
	},
	{
		Name:  "member option for a member that does not exist",
		Patch: `spec: {memberOptions: [{ordinal: 3, priority: 2}]}`,
		Field: "spec",
		Rule:  "spec.memberOptions[].ordinal must be less than spec.members",
	},
	{
		Name:  "no electable member",
		Patch: `spec: {members: 1, memberOptions: [{ordinal: 0, priority: 0}]}`,
		Field: "spec",
		Rule:  "must leave at least one member electable",
	},
	{
		Name:  "two arbiters",
		Patch: `spec: {arbiters: 2}`,
		Field: "spec.arbiters",
		Rule:  "should be less than or equal to 1",
	},
	{
		Name:  "arbiter with one data member",
		Patch: `spec: {members: 1, arbiters: 1}`,
		Field: "spec",
		Rule:  "spec.arbiters needs at least 2 data-bearing spec.members",
	},
	{
		Name:  "unknown recovery policy",
		Patch: `spec: {recovery: {majorityLoss: Yolo}}`,
		Field: "spec.recovery.majorityLoss",
		Rule:  `supported values: "Manual", "Automatic"`,
	},
	{
		Name:  "grace period too short",
		Patch: `spec: {recovery: {majorityLoss: Automatic, gracePeriod: 5s}}`,
		Field: "spec.recovery",
		Rule:  "spec.recovery.gracePeriod must be at least 30s",
	},
	{
		Name:  "election timeout zero",
		Patch: `spec: {replicaSet: {electionTimeoutMillis: 0}}`,
		Field: "spec.replicaSet.electionTimeoutMillis",
		Rule:  "should be greater than or equal to 1",
	},
	{
		Name:  "bad replica set name",
		Patch: `spec: {replicaSetName: "rs/0"}`,
		Field: "spec.replicaSetName",
		Rule:  "should match",
	},
	{
		Name:  "unknown field",
		Patch: `spec: {membrs: 3}`,
		Field: "spec.membrs",
		Rule:  "unknown field",
	},
}

// Objects returns the object before the change (nil for a create) and the object
// the user sends.
func (c Case) Objects() (old, changed *unstructured.Unstructured, err error) {
	base, err := parse(Valid)
	if err != nil {
		return nil, nil, fmt.Errorf("crdcases: Valid: %w", err)
	}
	patch, err := parse(c.Patch)
	if err != nil {
		return nil, nil, fmt.Errorf("crdcases: %s: %w", c.Name, err)
	}
	changed = &unstructured.Unstructured{Object: merge(base.Object, patch.Object)}
	if c.Update {
		if old, err = parse(Valid); err != nil {
			return nil, nil, err
		}
	}
	return old, changed, nil
}

func parse(y string) (*unstructured.Unstructured, error) {
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		return nil, err
	}
	m := map[string]any{}
	// The API server's JSON decoding: whole numbers become int64, as CEL expects.
	if err := json.Unmarshal(j, &m); err != nil {
		return nil, err
	}
	return &unstructured.Unstructured{Object: m}, nil
}

// merge returns dst with src merged over it: maps merge key by key, anything
// else in src replaces what dst has.
func merge(dst, src map[string]any) map[string]any {
	for k, v := range src {
		sm, sok := v.(map[string]any)
		dm, dok := dst[k].(map[string]any)
		if sok && dok {
			dst[k] = merge(dm, sm)
			continue
		}
		dst[k] = v
	}
	return dst
}
