package mongo

import "testing"

func TestBinaryAllowed(t *testing.T) {
	for _, tc := range []struct {
		version, fcv string
		ok           bool
	}{
		{"7.0.14", "6.0", true},  // the upgrade's roll
		{"7.0.14", "7.0", true},  // done
		{"7.0.12", "7.0", true},  // a patch downgrade on the same line
		{"6.0.19", "6.0", true},  // back before the FCV was set
		{"8.0.4", "6.0", false},  // two majors: 7.0 first
		{"6.0.19", "7.0", false}, // below the FCV: mongod 6.0 cannot start on it
		{"8.0", "7.0", true},
		{"7", "7.0", false},
	} {
		ok, why := BinaryAllowed(tc.version, tc.fcv)
		if ok != tc.ok || ok != (why == "") {
			t.Errorf("BinaryAllowed(%s, %s) = %t %q", tc.version, tc.fcv, ok, why)
		}
	}
	if Line("7.0.14") != "7.0" || Line("x.0") != "" || CompareLines("6.0", "7.0") != -1 || CompareLines("7.1", "7.0") != 1 ||
		CompareVersions("7.0.9", "7.0.14") != -1 || CompareLines("7.0.9", "7.0.14") != 0 {
		t.Error("Line or CompareLines")
	}
}
