package mongo

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Line is a version's release line, "MAJOR.MINOR" ("7.0" of "7.0.14"), the
// form featureCompatibilityVersion takes; "" when v is not a version.
func Line(v string) string {
	parts := strings.SplitN(strings.TrimSpace(v), ".", 3)
	if len(parts) < 2 {
		return ""
	}
	for _, p := range parts[:2] {
		if _, err := strconv.Atoi(p); err != nil {
			return ""
		}
	}
	return parts[0] + "." + parts[1]
}

// major is the major version of a line, -1 when it is none.
func major(line string) int {
	m, _, _ := strings.Cut(line, ".")
	n, err := strconv.Atoi(m)
	if err != nil {
		return -1
	}
	return n
}

// CompareLines orders release lines: -1, 0 or 1 as a is before, the same
// as or after b ("6.0" < "7.0" < "8.0"; "7.0" < "7.1").
func CompareLines(a, b string) int { return CompareVersions(Line(a), Line(b)) }

// CompareVersions orders versions part by part, numerically ("7.0.9" <
// "7.0.14"); a missing part is 0.
func CompareVersions(a, b string) int {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := range max(len(pa), len(pb)) {
		var x, y int
		if i < len(pa) {
			x, _ = strconv.Atoi(pa[i])
		}
		if i < len(pb) {
			y, _ = strconv.Atoi(pb[i])
		}
		if x != y {
			return cmp.Compare(x, y)
		}
	}
	return 0
}

// BinaryAllowed says whether a binary of version may run a replica set
// whose featureCompatibilityVersion is fcv, and why not: MongoDB runs a
// binary of the FCV's own line or of the next major line only, so an
// upgrade moves one major version at a time (set the FCV before the next)
// and a binary below the FCV cannot start on the data.
func BinaryAllowed(version, fcv string) (bool, string) {
	line := Line(version)
	switch {
	case line == "" || Line(fcv) == "":
		return false, fmt.Sprintf("%q or the featureCompatibilityVersion %q is not a version", version, fcv)
	case CompareLines(line, fcv) < 0:
		return false, fmt.Sprintf("%s is below the replica set's featureCompatibilityVersion %s: mongod %s cannot start on its data; set the featureCompatibilityVersion to %s first to downgrade", version, fcv, line, line)
	case major(line) > major(fcv)+1:
		return false, fmt.Sprintf("%s is more than one major version above the featureCompatibilityVersion %s: upgrade one major version at a time (to %d.0 first)", version, fcv, major(fcv)+1)
	}
	return true, ""
}

// ServerVersion is buildInfo's version: what the member's binary is. It
// needs no authentication (arbiters answer too).
func (c *Client) ServerVersion(ctx context.Context, host string) (string, error) {
	var reply struct {
		Version string `bson:"version"`
	}
	err := c.run(ctx, host, "buildInfo", false, bson.D{{Key: "buildInfo", Value: 1}}, &reply)
	return reply.Version, err
}

// FeatureCompatibilityVersion is getParameter's featureCompatibilityVersion
// on host: its version, and its targetVersion while a change is under way
// ("" when none).
func (c *Client) FeatureCompatibilityVersion(ctx context.Context, host string) (FCV, error) {
	var reply struct {
		FCV FCV `bson:"featureCompatibilityVersion"`
	}
	err := c.run(ctx, host, "getParameter", true, bson.D{{Key: "getParameter", Value: 1}, {Key: "featureCompatibilityVersion", Value: 1}}, &reply)
	return reply.FCV, err
}

// SetFeatureCompatibilityVersion is setFeatureCompatibilityVersion on the
// primary, waiting for a majority within the call's deadline. mongod 7.0+
// requires confirm: true and 6.0 refuses it as an unknown field (40415):
// it is sent, and left out once when the binary does not know it.
func (c *Client) SetFeatureCompatibilityVersion(ctx context.Context, host, version string) error {
	wc := bson.E{Key: "writeConcern", Value: bson.D{{Key: "w", Value: "majority"}, {Key: "wtimeout", Value: c.serverWait(ctx).Milliseconds()}}}
	cmd := bson.D{{Key: "setFeatureCompatibilityVersion", Value: version}, {Key: "confirm", Value: true}, wc}
	err := c.run(ctx, host, "setFeatureCompatibilityVersion", true, cmd, nil)
	if IsCode(err, codeUnknownField) {
		cmd = bson.D{{Key: "setFeatureCompatibilityVersion", Value: version}, wc}
		err = c.run(ctx, host, "setFeatureCompatibilityVersion", true, cmd, nil)
	}
	return err
}

// codeUnknownField is IDLUnknownField: a command field the binary does not know.
const codeUnknownField = 40415

// FCV is a replica set's featureCompatibilityVersion document.
type FCV struct {
	Version string `bson:"version"`
	// TargetVersion is set while the FCV moves (an interrupted change).
	TargetVersion string `bson:"targetVersion,omitempty"`
}
