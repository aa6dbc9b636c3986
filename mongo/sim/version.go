package sim

import (
	"fmt"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Version is the mongod version a member reports when nothing names one
// (no MONGO_VERSION in its environment).
const Version = "7.0.14"

// releaseLine is what one mongod major.minor line reports: its wire
// version, the patch release it stands for when only the line is named,
// and a git hash so tools that print one find one.
type releaseLine struct {
	maxWire    int32
	latest     string
	gitVersion string
	// what the official image's build reports: its Ubuntu, OpenSSL and allocator
	distmod, openssl, allocator string
}

// releaseLines are the mongod lines the simulator behaves as.
var releaseLines = map[string]releaseLine{
	"6.0": {maxWire: 17, latest: "6.0.19", gitVersion: "5f5b6c8f0c2c8c2a2b25f9e7c7a1e0d1f4a5b6c7", distmod: "ubuntu2204", openssl: "OpenSSL 3.0.2 15 Mar 2022", allocator: "tcmalloc"},
	"7.0": {maxWire: 21, latest: "7.0.14", gitVersion: "ce59cfc6a3c5e5c067dca0d30697edd68d4f5188", distmod: "ubuntu2204", openssl: "OpenSSL 3.0.2 15 Mar 2022", allocator: "tcmalloc"},
	"8.0": {maxWire: 25, latest: "8.0.4", gitVersion: "bc35ab4305d9920d9d0491c1c9ef9b72383d31f9", distmod: "ubuntu2404", openssl: "OpenSSL 3.0.13 30 Jan 2024", allocator: "tcmalloc-google"},
}

// ResolveVersion turns what an image says (MONGO_VERSION: "8.0.4", or a
// line "8.0") into the full version a member reports; a version outside
// the simulated lines is refused, as no such binary exists.
func ResolveVersion(v string) (string, error) {
	v = strings.TrimSpace(v)
	parts := strings.Split(v, ".")
	if len(parts) < 2 || len(parts) > 3 {
		return "", fmt.Errorf("mongod-sim: unsupported MONGO_VERSION %q (6.0, 7.0 or 8.0 releases)", v)
	}
	for _, p := range parts {
		if _, err := strconv.Atoi(p); err != nil {
			return "", fmt.Errorf("mongod-sim: unsupported MONGO_VERSION %q (6.0, 7.0 or 8.0 releases)", v)
		}
	}
	line, ok := releaseLines[parts[0]+"."+parts[1]]
	if !ok {
		return "", fmt.Errorf("mongod-sim: unsupported MONGO_VERSION %q (6.0, 7.0 or 8.0 releases)", v)
	}
	if len(parts) == 2 {
		return line.latest, nil
	}
	return v, nil
}

func (c Config) release() releaseLine {
	if l, ok := releaseLines[c.MajorMinor()]; ok {
		return l
	}
	return releaseLines["7.0"]
}

// MaxWireVersion is hello's and buildInfo's maxWireVersion for the version.
func (c Config) MaxWireVersion() int32 { return c.release().maxWire }

// GitVersion is buildInfo's gitVersion.
func (c Config) GitVersion() string { return c.release().gitVersion }

// MajorMinor is the "8.0" of ServerVersion, the form featureCompatibilityVersion takes.
func (c Config) MajorMinor() string {
	v := c.ServerVersion
	if v == "" {
		v = Version
	}
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return v
	}
	return parts[0] + "." + parts[1]
}

// PreviousMajorMinor is the FCV a binary may be downgraded to ("7.0" for 8.0).
func (c Config) PreviousMajorMinor() string {
	switch c.MajorMinor() {
	case "8.0":
		return "7.0"
	case "7.0":
		return "6.0"
	}
	return "5.0"
}

// versionArray is buildInfo's [major, minor, patch, 0].
func (c Config) versionArray() bson.A {
	out := bson.A{}
	v := c.ServerVersion
	if v == "" {
		v = Version
	}
	for _, p := range strings.SplitN(v, ".", 3) {
		n, _ := strconv.Atoi(p)
		out = append(out, int32(n))
	}
	for len(out) < 4 {
		out = append(out, int32(0))
	}
	return out
}

// VersionText is what `mongod --version` prints.
func (c Config) VersionText() string {
	return fmt.Sprintf(`db version v%s
Build Info: {
    "version": "%s",
    "gitVersion": "%s",
    "openSSLVersion": "%s",
    "modules": [],
    "allocator": "%s",
    "environment": {
        "distmod": "%s",
        "distarch": "x86_64",
        "target_arch": "x86_64"
    }
}
`, c.ServerVersion, c.ServerVersion, c.GitVersion(), c.release().openssl, c.release().allocator, c.release().distmod)
}

// buildInfo is the buildInfo command's answer, as mongod's.
func (c Config) buildInfo() bson.D {
	r := c.release()
	return bson.D{{Key: "version", Value: c.ServerVersion}, {Key: "gitVersion", Value: c.GitVersion()}, {Key: "modules", Value: bson.A{}},
		{Key: "allocator", Value: r.allocator}, {Key: "javascriptEngine", Value: "mozjs"}, {Key: "sysInfo", Value: "deprecated"},
		{Key: "versionArray", Value: c.versionArray()},
		{Key: "openssl", Value: bson.D{{Key: "running", Value: r.openssl}, {Key: "compiled", Value: r.openssl}}},
		{Key: "buildEnvironment", Value: bson.D{{Key: "distmod", Value: r.distmod}, {Key: "distarch", Value: "x86_64"},
			{Key: "cc", Value: "/opt/mongodbtoolchain/v4/bin/gcc: gcc (GCC) 11.3.0"}, {Key: "ccflags", Value: "-Werror -include mongo/platform/basic.h -ffp-contract=off -fasynchronous-unwind-tables -g2 -Wall -Wsign-compare -Wno-unknown-pragmas -Winvalid-pch -O2"},
			{Key: "cxx", Value: "/opt/mongodbtoolchain/v4/bin/g++: g++ (GCC) 11.3.0"}, {Key: "cxxflags", Value: "-Woverloaded-virtual -Wpessimizing-move -Wno-maybe-uninitialized -fsized-deallocation -std=c++20"},
			{Key: "linkflags", Value: "-Wl,--fatal-warnings -pthread -Wl,-z,now -fuse-ld=lld -fstack-protector-strong -gdwarf-5 -Wl,--no-threads -Wl,--build-id -Wl,--hash-style=gnu -Wl,-z,noexecstack -Wl,--warn-execstack -Wl,-z,relro -Wl,--compress-debug-sections=none -Wl,-z,origin -Wl,--enable-new-dtags"},
			{Key: "target_arch", Value: "x86_64"}, {Key: "target_os", Value: "linux"},
			{Key: "cppdefines", Value: "SAFEINT_USE_INTRINSICS 0 PCRE2_STATIC NDEBUG _XOPEN_SOURCE 700 _GNU_SOURCE _FORTIFY_SOURCE 2 ABSL_FORCE_ALIGNED_ACCESS BOOST_ENABLE_ASSERT_DEBUG_HANDLER BOOST_FILESYSTEM_NO_CXX20_ATOMIC_REF BOOST_LOG_NO_SHORTHAND_NAMES BOOST_LOG_USE_NATIVE_SYSLOG BOOST_LOG_WITHOUT_THREAD_ATTR BOOST_MATH_NO_LONG_DOUBLE_MATH_FUNCTIONS BOOST_SYSTEM_NO_DEPRECATED BOOST_THREAD_USES_DATETIME BOOST_THREAD_VERSION 5"}}},
		{Key: "bits", Value: int32(64)}, {Key: "debug", Value: false}, {Key: "maxBsonObjectSize", Value: int32(maxBSONSize)},
		{Key: "storageEngines", Value: bson.A{"devnull", "wiredTiger"}}}
}
