package actors

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/mongo"
)

// LoginRecheck is how long a password that opened its user is trusted
// without another login while its Secret keeps its resourceVersion: a
// changed Secret is checked at once, a password changed in the database
// behind the Secret's back within LoginRecheck.
const LoginRecheck = 5 * time.Minute

// openedAt is a Secret's resourceVersion whose password opened its user, and when.
type openedAt struct {
	version string
	at      time.Time
}

// userSecret is one user's Secret as read for an observation or an action.
// The password stays here: never in an Observation, an event or a log.
type userSecret struct {
	Credential
	namespace string
	password  string
	read      bool
}

type userSecrets struct{ admin, operator userSecret }

func (w *KubeWorld) readUsers(ctx context.Context, m *v1alpha1.Mgors) userSecrets {
	return userSecrets{
		admin:    w.userSecret(ctx, m.Namespace, m.AdminSecretName(), AdminUsername),
		operator: w.userSecret(ctx, m.Namespace, m.OperatorSecretName(), mongo.OperatorUser),
	}
}

func (w *KubeWorld) userSecret(ctx context.Context, namespace, name, defaultUser string) userSecret {
	us := userSecret{Credential: Credential{User: defaultUser, Secret: name}, namespace: namespace}
	sec, err := w.Cache.SecretData(ctx, namespace, name)
	if err != nil {
		return us
	}
	us.User, us.password = userAndPassword(sec, defaultUser)
	us.SecretVersion, us.read = sec.ResourceVersion, true
	return us
}

// userAndPassword reads a user Secret's keys; the user name defaults to
// defaultUser when the Secret names none.
func userAndPassword(sec *corev1.Secret, defaultUser string) (user, password string) {
	user = string(sec.Data[v1alpha1.AdminUsernameSecretKey])
	if user == "" {
		user = defaultUser
	}
	return user, string(sec.Data[v1alpha1.AdminPasswordSecretKey])
}

// login reports whether us's password opens its user on host; nil when
// that could not be learned (no host, the Secret unread, the member silent).
func (w *KubeWorld) login(ctx context.Context, admin mongo.Admin, host string, us userSecret) *bool {
	if host == "" || !us.read {
		return nil
	}
	key := us.namespace + "/" + us.Secret
	w.mu.Lock()
	prev, ok := w.opened[key]
	w.mu.Unlock()
	if ok && prev.version == us.SecretVersion && time.Since(prev.at) < LoginRecheck {
		return new(true)
	}
	err := admin.Login(ctx, host, mongo.AdminUser(us.User, us.password))
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case err == nil:
		if w.opened == nil {
			w.opened = map[string]openedAt{}
		}
		w.opened[key] = openedAt{version: us.SecretVersion, at: time.Now()}
		return new(true)
	case errors.Is(err, mongo.ErrAuthenticationFailed):
		delete(w.opened, key)
		return new(false)
	}
	return nil
}

// observeOwnLogin checks, when the operator authenticates as its own user,
// that its Secret's password opens it on source before anything is read
// with it; false when it does not (OperatorLogin false).
func (w *KubeWorld) observeOwnLogin(ctx context.Context, admin mongo.Admin, source string, us userSecret, o *Observation) bool {
	o.OperatorLogin = w.login(ctx, admin, source, us)
	return o.OperatorLogin == nil || *o.OperatorLogin
}

// observeUsers asks the primary whether the admin user and the operator's
// user exist, and whether their Secrets' passwords open them.
func (w *KubeWorld) observeUsers(ctx context.Context, admin mongo.Admin, auth Auth, users userSecrets, o *Observation) {
	if o.Primary == "" {
		return
	}
	if users.admin.read {
		if ok, err := admin.UserExists(ctx, o.Primary, users.admin.User); err == nil {
			o.AdminUser = &ok
			if ok {
				o.AdminLogin = w.login(ctx, admin, o.Primary, users.admin)
			}
		}
	}
	if ok, err := admin.UserExists(ctx, o.Primary, users.operator.User); err == nil {
		o.OperatorUser = &ok
		if ok && auth != AuthOperator {
			o.OperatorLogin = w.login(ctx, admin, o.Primary, users.operator)
		}
	}
}

// actUsers creates a user or sets a password, always from the Secret as
// it is now: a user action decided from an older resourceVersion fails and
// is decided again, so PasswordApplied names the version applied.
func (w *KubeWorld) actUsers(ctx context.Context, m *v1alpha1.Mgors, admin mongo.Admin, a Action) error {
	if a.Kind == ActCreateUser {
		us := w.userSecret(ctx, m.Namespace, m.AdminSecretName(), AdminUsername)
		if !us.read {
			return fmt.Errorf("reading the admin Secret %s failed", m.AdminSecretName())
		}
		return admin.CreateUser(ctx, a.Host, us.User, us.password, []mongo.Role{{Role: "root", DB: "admin"}})
	}
	c := a.Credential
	us := w.userSecret(ctx, m.Namespace, c.Secret, c.User)
	switch {
	case !us.read:
		return fmt.Errorf("reading the Secret %s failed", c.Secret)
	case us.SecretVersion != c.SecretVersion || us.User != c.User:
		return fmt.Errorf("the Secret %s changed since the decision (resourceVersion %s, now %s): deciding again", c.Secret, c.SecretVersion, us.SecretVersion)
	case a.Kind == ActCreateOperatorUser:
		return admin.CreateUser(ctx, a.Host, us.User, us.password, mongo.OperatorRoles())
	}
	return admin.UpdatePassword(ctx, a.Host, us.User, us.password)
}
