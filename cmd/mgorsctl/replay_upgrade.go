package main

import (
	"fmt"
	"sort"
	"strings"

	"github.com/mgors/operator/actors"
)

// describeUpgrade accounts for the version events: what each member runs,
// what was accepted or refused and why, the FCV.
func describeUpgrade(e actors.Event) string {
	switch e := e.(type) {
	case actors.VersionsObserved:
		var ms []string
		for name, v := range e.Members {
			ms = append(ms, name+"="+v)
		}
		sort.Strings(ms)
		return fmt.Sprintf("featureCompatibilityVersion %s; %s", nonEmpty(e.FCV, "unknown"), strings.Join(ms, " "))
	case actors.UpgradeStarted:
		what := "upgrade"
		if e.Downgrade {
			what = "downgrade"
		}
		return fmt.Sprintf("%s %s → %s (featureCompatibilityVersion %s): members restart one at a time, the primary last", what, e.From, e.To, nonEmpty(e.FCV, "none yet"))
	case actors.VersionRefused:
		return fmt.Sprintf("%s; the members keep %s", e.Reason, e.Running)
	case actors.FCVSet:
		return fmt.Sprintf("featureCompatibilityVersion %s → %s", e.From, e.To)
	case actors.UpgradeFinished:
		return fmt.Sprintf("every member runs %s, featureCompatibilityVersion %s", e.Version, e.FCV)
	}
	return ""
}
