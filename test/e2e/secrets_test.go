package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/mgors/operator/test/localkube/harness"
	"github.com/mgors/operator/test/secretscan"
)

// scanForSecrets is run by the harness at the end of every test, before its
// namespace goes: no value of any Secret of the namespace's clusters appears
// in the operator's logs, the Events, the event logs or a status (invariant
// 5). A test that never deployed the operator has nothing to scan but Events.
func scanForSecrets(tb testing.TB, env *harness.Env) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	secrets, err := secretscan.Secrets(ctx, env.Client, mgorsClient(tb, env), env.Namespace)
	if err != nil {
		tb.Errorf("secret scan: reading the Secrets: %v", err)
		return
	}
	if len(secrets) == 0 {
		return
	}
	texts, err := secretscan.Collect(ctx, env.Client, mgorsClient(tb, env), "mgors-system", env.Namespace)
	if err != nil {
		tb.Errorf("secret scan: %v", err)
		return
	}
	leaks := secretscan.Scan(texts, secrets)
	for _, leak := range leaks {
		tb.Errorf("secret scan: %s", leak)
	}
	if len(leaks) == 0 {
		tb.Logf("secret scan: %d Secret values, %d texts: none leaked", len(secrets), len(texts))
	}
}
