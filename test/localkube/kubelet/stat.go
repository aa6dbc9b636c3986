package kubelet

import "golang.org/x/sys/unix"

type unixStat struct{ dev uint64 }

func statDev(p string, out *unixStat) error {
	var st unix.Stat_t
	if err := unix.Stat(p, &st); err != nil {
		return err
	}
	out.dev = st.Dev
	return nil
}
