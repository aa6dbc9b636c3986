package sim

import (
	"net"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// restrictionsMet applies authenticationRestrictions as mongod does at
// authentication: the user's own list and each held role's list must each
// have a document (empty lists impose nothing) whose clientSource and
// serverAddress both contain the connection's addresses.
func (n *Node) restrictionsMet(db, user string, client, server net.Addr) bool {
	doc := n.userDoc(db, user)
	if doc == nil {
		return true
	}
	lists := []bson.RawValue{doc.Lookup("authenticationRestrictions")}
	for _, r := range n.resolve(parseRoles(doc.Lookup("roles"), db)).inherited {
		if rd := n.roleDoc(r.DB, r.Role); rd != nil {
			lists = append(lists, rd.Lookup("authenticationRestrictions"))
		}
	}
	cip, sip := addrIP(client), addrIP(server)
	for _, l := range lists {
		arr, ok := l.ArrayOK()
		if !ok {
			continue
		}
		vals, _ := arr.Values()
		if len(vals) == 0 {
			continue
		}
		met := false
		for _, v := range vals {
			d, _ := v.DocumentOK()
			if ipListed(d.Lookup("clientSource"), cip) && ipListed(d.Lookup("serverAddress"), sip) {
				met = true
				break
			}
		}
		if !met {
			return false
		}
	}
	return true
}

func addrIP(a net.Addr) net.IP {
	if t, ok := a.(*net.TCPAddr); ok {
		return t.IP
	}
	if a == nil {
		return nil
	}
	host, _, _ := net.SplitHostPort(a.String())
	return net.ParseIP(host)
}

// ipListed: an absent field allows any address; otherwise an address or
// CIDR in the list must contain ip.
func ipListed(v bson.RawValue, ip net.IP) bool {
	arr, ok := v.ArrayOK()
	if !ok {
		return true
	}
	vals, _ := arr.Values()
	for _, x := range vals {
		s, _ := x.StringValueOK()
		if !strings.Contains(s, "/") {
			if p := net.ParseIP(s); p != nil && ip != nil && p.Equal(ip) {
				return true
			}
			continue
		}
		if _, nw, err := net.ParseCIDR(s); err == nil && ip != nil && nw.Contains(ip) {
			return true
		}
	}
	return false
}

// nonEmptyArray: mongod stores authenticationRestrictions only when given
// and not empty.
func nonEmptyArray(v bson.RawValue) bool {
	arr, ok := v.ArrayOK()
	if !ok {
		return false
	}
	vals, _ := arr.Values()
	return len(vals) > 0
}
