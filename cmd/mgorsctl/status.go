// The status and wait verbs: a cluster as a table, and waiting for Healthy.

package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/kube/client"
)

func status(ctx context.Context, f flags, name string, out io.Writer) error {
	mc, err := mgorsClient(f)
	if err != nil {
		return err
	}
	m, err := mc.Mgorses(f.namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	return printStatus(out, m)
}

func printStatus(out io.Writer, m *v1alpha1.Mgors) error {
	st := m.Status
	w := newSheet(out)
	w.printf("%s/%s\tphase %s\tready %s\tprimary %s\n", m.Namespace, m.Name, st.Phase, st.Ready, st.Primary)
	w.printf("replica set %s\tconfig %d/%d\tevent log seq %d (%s)\n", st.ReplicaSetName, st.ConfigVersion, st.ConfigTerm, st.EventLog.Sequence, st.EventLog.Store)
	if st.Version != "" {
		w.printf("running %s\tfeatureCompatibilityVersion %s\n", st.Version, nonEmpty(st.FeatureCompatibilityVersion, "unknown"))
	}
	if st.ConnectionString != "" {
		w.printf("connect\t%s\n", st.ConnectionString)
	}
	w.printf("\nMEMBER\tSTATE\tHEALTHY\tLAG(s)\tVOTES\tPRIORITY\tHIDDEN" + "\n")
	for _, ms := range st.Members {
		w.printf("%s\t%s\t%t\t%d\t%d\t%d\t%t\n", ms.Name, ms.State, ms.Healthy, ms.OptimeLagSeconds, ms.Votes, ms.Priority, ms.Hidden)
	}
	w.printf("\nCONDITION\tSTATUS\tREASON\tMESSAGE" + "\n")
	for _, c := range st.Conditions {
		w.printf("%s\t%s\t%s\t%s\n", c.Type, c.Status, c.Reason, c.Message)
	}
	return w.flush()
}

func loadingRules(f flags) clientcmd.ClientConfig {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if f.kubeconfig != "" {
		rules.ExplicitPath = f.kubeconfig
	}
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{})
}

func kubeClient(f flags) (kubernetes.Interface, error) {
	cfg, err := loadingRules(f).ClientConfig()
	if err != nil {
		return nil, err
	}
	cfg.Timeout = 10 * time.Second
	return kubernetes.NewForConfig(cfg)
}

func mgorsClient(f flags) (client.Interface, error) {
	cfg, err := loadingRules(f).ClientConfig()
	if err != nil {
		return nil, err
	}
	cfg.Timeout = 10 * time.Second
	return client.NewForConfig(cfg)
}

// progress is what wait shows of a cluster: a new line whenever it changes.
func progress(m *v1alpha1.Mgors) string {
	st := m.Status
	line := fmt.Sprintf("phase %-12s ready %-5s primary %s", nonEmpty(string(st.Phase), "-"), nonEmpty(st.Ready, "-"), nonEmpty(st.Primary, "-"))
	for _, c := range st.Conditions {
		if c.Type == v1alpha1.ConditionStalled && c.Status == metav1.ConditionTrue {
			line += "  stalled: " + c.Message
		}
		if c.Type == v1alpha1.ConditionProgressing && c.Status == metav1.ConditionTrue {
			line += "  (" + c.Message + ")"
		}
	}
	return line
}

func nonEmpty(s, dflt string) string {
	if s == "" {
		return dflt
	}
	return s
}

// waitHealthy polls the Mgors and prints its progress until it is Healthy with
// a primary, or the timeout passes.
func waitHealthy(ctx context.Context, mc client.Interface, f flags, name string, out io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	start, last := time.Now(), ""
	for {
		cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
		m, err := mc.Mgorses(f.namespace).Get(cctx, name, metav1.GetOptions{})
		ccancel()
		switch {
		case err == nil:
			if line := progress(m); line != last {
				if _, err := fmt.Fprintf(out, "%6.1fs  %s\n", time.Since(start).Seconds(), line); err != nil {
					return err
				}
				last = line
			}
			if m.Status.Phase == v1alpha1.PhaseHealthy && m.Status.Primary != "" && m.Status.ObservedGeneration == m.Generation {
				return nil
			}
		case ctx.Err() == nil:
			if line := "waiting for " + name + ": " + err.Error(); line != last {
				if _, err := fmt.Fprintf(out, "%6.1fs  %s\n", time.Since(start).Seconds(), line); err != nil {
					return err
				}
				last = line
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s/%s is not Healthy after %s; see mgorsctl status %s and kubectl describe mgors %s", f.namespace, name, f.timeout, name, name)
		case <-time.After(f.poll):
		}
	}
}

// sheet is a tabwriter that keeps the first write error and reports it at flush.
type sheet struct {
	w   *tabwriter.Writer
	err error
}

func newSheet(out io.Writer) *sheet { return &sheet{w: tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)} }

func (s *sheet) printf(format string, a ...any) {
	if s.err == nil {
		_, s.err = fmt.Fprintf(s.w, format, a...)
	}
}

func (s *sheet) flush() error {
	if s.err != nil {
		return s.err
	}
	return s.w.Flush()
}
