package chaos

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"time"
)

//go:embed timeline.html.tmpl
var timelineHTML string

var timelineTmpl = template.Must(template.New("timeline").Parse(timelineHTML))

// The timeline's geometry, in SVG units: a label column, then the run.
const (
	labelW   = 190.0
	plotW    = 1300.0
	laneH    = 13.0 // one lane of fault labels
	rowH     = 14.0 // a member or phase row
	writesH  = 44.0 // the writes-per-second row
	maxLanes = 8
)

// shape is one SVG element of the timeline; Class says what it shows (the
// test and the page's CSS rely on it).
type shape struct {
	X, Y, W, H float64
	Fill       string
	Class      string
	Title      string
}

type label struct {
	X, Y   float64
	Anchor string
	Class  string
	Text   string
}

type line struct {
	X1, Y1, X2, Y2 float64
	Class          string
}

type legendItem struct{ Fill, Text string }

// timeline is what timeline.html.tmpl draws.
type timeline struct {
	Title      string
	Summary    string
	Width      float64
	Height     float64
	Rects      []shape
	Labels     []label
	Grid       []line // under everything
	Marks      []line // over everything
	Legend     []legendItem
	Violations []Violation
}

var (
	faultColors = map[FaultKind]string{
		KillMongod: "#d62728", DeletePod: "#ff7f0e", PausePrimary: "#9467bd", PartitionPrimary: "#8c564b",
		PartitionMinority: "#e377c2", KillOperatorLeader: "#2ca02c", RestartControlPlane: "#17becf", NodeDown: "#7f7f7f",
		KeyfileRotation: "#bcbd22",
	}
	stateColors = map[string]string{
		"PRIMARY": "#1f4e9c", "SECONDARY": "#9ec3ee", "ARBITER": "#c9c9c9", "unreachable": "#e0413a", "other": "#f2b134",
	}
)

// faultColor is a kind's band colour; a scenario's own kind (not in
// FaultKinds) has a neutral one.
func faultColor(k FaultKind) string {
	if c, ok := faultColors[k]; ok {
		return c
	}
	return "#bcbd22"
}

func stateColor(s string) string {
	if c, ok := stateColors[s]; ok {
		return c
	}
	return stateColors["other"]
}

func phaseColor(p string) string {
	switch p {
	case "Healthy":
		return "#4caf50"
	case "Recovering", "Creating", "Scaling", "Updating":
		return "#f2b134"
	case "":
		return "#dddddd"
	}
	return "#e0413a"
}

func round1(x float64) float64 { return math.Round(x*10) / 10 }

// renderTimeline draws the run: fault bands across every row, then per cluster
// the Mgors phase, one row per member coloured by its sampled state, the
// acknowledged writes per second and the write gap each fault caused.
func renderTimeline(w io.Writer, h *History, v Verdict) error {
	start, end := span(h)
	x := func(t time.Time) float64 {
		return round1(labelW + plotW*float64(t.Sub(start))/float64(end.Sub(start)))
	}
	var tl timeline
	tl.Title = fmt.Sprintf("chaos seed %d", h.Seed)
	var sum bytes.Buffer
	Summary(&sum, h, v)
	tl.Summary = sum.String()
	tl.Violations = v.Violations

	// Time axis: about ten ticks at a round step.
	y := 14.0
	step := tickStep(end.Sub(start))
	for d := time.Duration(0); d <= end.Sub(start); d += step {
		tl.Labels = append(tl.Labels, label{X: x(start.Add(d)), Y: y, Anchor: "middle", Class: "tick", Text: "+" + d.String()})
	}
	y += 6

	// Fault labels in lanes so that ~50 of them stay readable.
	faults := sortedFaults(h)
	laneEnd := make([]float64, maxLanes)
	lanes := 1
	laneOf := make([]int, len(faults))
	for i, f := range faults {
		fx := x(f.Start)
		best := 0
		for l := range laneEnd {
			if laneEnd[l] <= fx {
				best = l
				break
			}
			if laneEnd[l] < laneEnd[best] {
				best = l
			}
		}
		laneOf[i] = best
		laneEnd[best] = fx + 6.2*float64(len(faultLabel(f))) + 6
		lanes = max(lanes, best+1)
	}
	bandTop := y
	for i, f := range faults {
		tl.Labels = append(tl.Labels, label{X: x(f.Start) + 1, Y: y + laneH*float64(laneOf[i]+1) - 3, Anchor: "start", Class: "fault-label", Text: faultLabel(f)})
	}
	y += laneH*float64(lanes) + 4

	// Per cluster: header, phase, members, writes.
	phases := map[string][]PhaseSample{}
	for _, p := range h.Phases {
		phases[p.Cluster] = append(phases[p.Cluster], p)
	}
	members := map[string]map[string][]MemberSample{}
	for _, s := range h.Members {
		if members[s.Cluster] == nil {
			members[s.Cluster] = map[string][]MemberSample{}
		}
		members[s.Cluster][s.Member] = append(members[s.Cluster][s.Member], s)
	}
	acked := ackedEnds(h)
	for _, c := range clusters(h) {
		y += 8
		tl.Labels = append(tl.Labels, label{X: 4, Y: y + 11, Anchor: "start", Class: "cluster", Text: fmt.Sprintf("%s (linearizable: %s)", c, yesNo(v.Linearizable[c]))})
		y += rowH + 4

		tl.Labels = append(tl.Labels, label{X: labelW - 6, Y: y + 11, Anchor: "end", Class: "row-label", Text: "Mgors phase"})
		ps := phases[c]
		sort.SliceStable(ps, func(i, j int) bool { return ps[i].At.Before(ps[j].At) })
		for _, r := range stretches(len(ps), func(i int) string {
			if !ps[i].Current {
				return ps[i].Phase + " (not current)"
			}
			return ps[i].Phase
		}, func(i int) time.Time { return ps[i].At }, end) {
			tl.Rects = append(tl.Rects, shape{X: x(r.from), Y: y, W: round1(max(x(r.to)-x(r.from), 0.5)), H: rowH - 2,
				Fill: phaseColor(ps[r.first].Phase), Class: "phase", Title: fmt.Sprintf("%s %s to %s", r.key, at(h, r.from), at(h, r.to))})
		}
		y += rowH

		for _, m := range sortedKeys(members[c]) {
			ss := members[c][m]
			sort.SliceStable(ss, func(i, j int) bool { return ss[i].At.Before(ss[j].At) })
			tl.Labels = append(tl.Labels, label{X: labelW - 6, Y: y + 11, Anchor: "end", Class: "row-label", Text: shortHost(m)})
			for _, r := range stretches(len(ss), func(i int) string { return memberState(ss[i]) },
				func(i int) time.Time { return ss[i].At }, end) {
				s := ss[r.first]
				state := memberState(s)
				class := "member"
				if strings.HasPrefix(state, "PRIMARY") {
					class = "member primary"
				}
				title := fmt.Sprintf("%s %s to %s", state, at(h, r.from), at(h, r.to))
				if s.Term > 0 {
					title += fmt.Sprintf(", term %d", s.Term)
				}
				if s.Error != "" {
					title += ": " + clip(s.Error, 120)
				}
				fill := stateColor(strings.Fields(state)[0])
				if s.Error != "" {
					fill = stateColors["unreachable"]
				}
				tl.Rects = append(tl.Rects, shape{X: x(r.from), Y: y, W: round1(max(x(r.to)-x(r.from), 0.5)), H: rowH - 2, Fill: fill, Class: class, Title: title})
			}
			y += rowH
		}

		// Acknowledged writes per second, and the gaps.
		tl.Labels = append(tl.Labels, label{X: labelW - 6, Y: y + writesH/2 + 4, Anchor: "end", Class: "row-label", Text: "acked writes/s"})
		secs := int(math.Ceil(end.Sub(start).Seconds()))
		perSec := make([]int, max(secs, 1))
		for _, t := range acked[c] {
			if i := int(t.Sub(start).Seconds()); i >= 0 && i < len(perSec) {
				perSec[i]++
			}
		}
		peak := 1
		for _, n := range perSec {
			peak = max(peak, n)
		}
		barW := plotW / float64(len(perSec))
		for i, n := range perSec {
			if n == 0 {
				continue
			}
			bh := round1((writesH - 4) * float64(n) / float64(peak))
			tl.Rects = append(tl.Rects, shape{X: round1(labelW + barW*float64(i)), Y: round1(y + writesH - bh), W: round1(max(barW-0.3, 0.3)), H: bh,
				Fill: "#555555", Class: "writes", Title: fmt.Sprintf("+%ds: %d acknowledged writes", i, n)})
		}
		tl.Labels = append(tl.Labels, label{X: labelW + plotW + 4, Y: y + 10, Anchor: "start", Class: "tick", Text: fmt.Sprintf("%d/s", peak)})
		for _, g := range v.Gaps {
			if g.Cluster != c {
				continue
			}
			gx, gw := x(g.From), round1(max(x(g.To)-x(g.From), 1))
			tl.Rects = append(tl.Rects, shape{X: gx, Y: y + 1, W: gw, H: writesH - 2, Fill: "none", Class: "gap",
				Title: fmt.Sprintf("fault %d %s: no acknowledged write for %s (%s to %s)", g.Fault, g.Kind, g.Len.Round(time.Millisecond), at(h, g.From), at(h, g.To))})
			if gw > 34 {
				tl.Labels = append(tl.Labels, label{X: gx + gw/2, Y: y + 12, Anchor: "middle", Class: "gap-label", Text: g.Len.Round(100 * time.Millisecond).String()})
			}
		}
		y += writesH
	}
	y += 8

	// The fault bands go first so that every row draws over them.
	var bands []shape
	for _, f := range faults {
		fx := x(f.Start)
		bands = append(bands, shape{X: fx, Y: bandTop, W: round1(max(x(f.Healed)-fx, 2)), H: y - bandTop, Fill: faultColor(f.Kind), Class: "fault",
			Title: fmt.Sprintf("fault %d %s on %s: %s to %s, Healthy %s; evidence: %s", f.ID, f.Kind, strings.Join(f.Targets, ", "),
				at(h, f.Start), at(h, f.Healed), at(h, f.HealthyAt), f.Evidence)})
		if !f.HealthyAt.IsZero() {
			tl.Marks = append(tl.Marks, line{X1: x(f.HealthyAt), Y1: bandTop, X2: x(f.HealthyAt), Y2: y, Class: "healthy"})
		}
	}
	tl.Rects = append(bands, tl.Rects...)
	for d := time.Duration(0); d <= end.Sub(start); d += step {
		tl.Grid = append(tl.Grid, line{X1: x(start.Add(d)), Y1: 18, X2: x(start.Add(d)), Y2: y, Class: "grid"})
	}

	for _, k := range FaultKinds {
		tl.Legend = append(tl.Legend, legendItem{faultColors[k], string(k)})
	}
	for _, k := range ScenarioKinds {
		if slices.ContainsFunc(h.Faults, func(f Fault) bool { return f.Kind == k }) {
			tl.Legend = append(tl.Legend, legendItem{faultColors[k], string(k)})
		}
	}
	for _, s := range []string{"PRIMARY", "SECONDARY", "ARBITER", "unreachable", "other"} {
		tl.Legend = append(tl.Legend, legendItem{stateColors[s], s})
	}
	tl.Width, tl.Height = labelW+plotW+150, y // room for the last fault labels
	return timelineTmpl.Execute(w, tl)
}

func faultLabel(f Fault) string {
	short := make([]string, len(f.Targets))
	for i, t := range f.Targets {
		short[i] = shortHost(t)
	}
	t := strings.Join(short, ",")
	return fmt.Sprintf("#%d %s %s", f.ID, f.Kind, clip(t, 28))
}

// shortHost names a member by its pod: "demo-0" for
// "demo-0.demo-svc.ns.svc.cluster.local:27017"; other targets stay as they are.
func shortHost(host string) string {
	if name, _, ok := strings.Cut(host, "."); ok && strings.HasSuffix(host, ":27017") {
		return name
	}
	return host
}

func memberState(s MemberSample) string {
	switch {
	case s.Error != "":
		return "unreachable"
	case s.State == "":
		return "other"
	case s.State == "PRIMARY" && s.Term > 0:
		return fmt.Sprintf("PRIMARY term %d", s.Term)
	}
	return s.State
}

// span is the stretch the timeline shows: the run, widened to every record.
func span(h *History) (time.Time, time.Time) {
	start, end := h.Started, h.Ended
	see := func(t time.Time) {
		if t.IsZero() {
			return
		}
		if start.IsZero() || t.Before(start) {
			start = t
		}
		if t.After(end) {
			end = t
		}
	}
	for _, op := range h.Ops {
		see(op.Start)
		see(op.End)
	}
	for _, f := range h.Faults {
		see(f.Start)
		see(f.HealthyAt)
	}
	if !end.After(start) {
		end = start.Add(time.Second)
	}
	return start, end
}

func tickStep(d time.Duration) time.Duration {
	for _, s := range []time.Duration{time.Second, 5 * time.Second, 10 * time.Second, 30 * time.Second, time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute} {
		if d/s <= 12 {
			return s
		}
	}
	return 30 * time.Minute
}

// stretch is a run of consecutive samples with one key.
type stretch struct {
	key      string
	first    int
	from, to time.Time
}

// stretches merges n time-ordered samples into stretches of equal key; each lasts
// until the next stretch begins, the last until its last sample (or end, if
// that is its only sample, at most a second on).
func stretches(n int, key func(int) string, at func(int) time.Time, end time.Time) []stretch {
	var out []stretch
	for i := 0; i < n; i++ {
		k := key(i)
		if len(out) > 0 && out[len(out)-1].key == k {
			out[len(out)-1].to = at(i)
			continue
		}
		if len(out) > 0 {
			out[len(out)-1].to = at(i)
		}
		last := at(i).Add(time.Second)
		if last.After(end) {
			last = end
		}
		out = append(out, stretch{key: k, first: i, from: at(i), to: last})
	}
	return out
}
