// Package kubelet runs the pods bound to one Node of a localkube cluster as local
// processes: each pod gets its own network namespace on the cluster bridge, each
// container its own mount, UTS and PID namespaces with a root that stacks the image
// directory over an overlay of the host's root, its volumes at their mount paths,
// and the pod a faithful status. See docs/design/localkube-kubelet.md.
//
// Importing the package makes the binary its own container init helper: a process
// started with LOCALKUBE_CONTAINER_INIT set sets up the container in init() and
// executes the container's command, never reaching main.
//
// # On-disk layout
//
// One kubelet keeps all its state under Dir/nodes/NODE. It is the only state a
// kubelet keeps: a restarted kubelet re-adopts its pods from it, and `localkube down`
// or a test harness finds every process of every pod through it.
//
//	Dir/nodes/NODE/
//	  ipam/10.244.N.X              one file per leased pod IP, holding the pod UID
//	  ipam/last_reserved_ip        the address leased last: leases go round-robin
//	  images/NAME/                 image directories assembled at kubelet start
//	  pods/UID/
//	    pod.json                   {"namespace","name","uid","ip","veth"}
//	    netns                      the pod's network namespace (a bind mount of an nsfs file)
//	    etc-hosts resolv.conf hostname   files bind-mounted at /etc/hosts, /etc/resolv.conf, /etc/hostname
//	    start-time                 the pod's status.startTime
//	    sandbox/pid                with shareProcessNamespace: the pause process holding the
//	                               pod's PID namespace ("PID STARTTICKS"); also its chroot
//	    volumes/NAME/              emptyDir, secret, configMap, downwardAPI, projected content
//	    logs/CONTAINER/N.log       CRI-format log of restart N of a container (rotated N.log.1 …)
//	    containers/CONTAINER/
//	      state.json               restart count, container ID, last termination
//	      pid                      "PID STARTTICKS": the main process; it is its own
//	                               session and process-group leader, so -PID signals the group
//	      spec.json                what the container init helper executes
//	      stdout stderr            FIFOs the container writes its output into
//	      root/ scratch/           mount points, used only inside the container's mount namespace
//
// PodProcesses and KillAll read this layout for test harnesses and `localkube down`.
package kubelet
