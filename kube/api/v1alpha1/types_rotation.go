package v1alpha1

// RotationStatus is a change of the members' secrets or TLS under way, one
// rolling restart per step: a keyfile or CA rotation a person asked for,
// or a step of spec.tls' mode.
type RotationStatus struct {
	// Kind is what rotates: Keyfile, CA or TLSMode.
	// +kubebuilder:validation:Enum=Keyfile;CA;TLSMode
	Kind string `json:"kind"`
	// Request is the value of the annotation that asked for the rotation
	// (mgors.io/rotate-keyfile, mgors.io/rotate-ca); empty for TLSMode.
	// +optional
	Request string `json:"request,omitempty"`
	// Step is where it is: "2/3" for a rotation (the step whose Secret was
	// written last), "allowTLS → preferTLS" for a TLS mode step.
	Step string `json:"step"`
	// Message says what the step does or waits for, naming keys and CAs by
	// fingerprint only.
	// +optional
	Message string `json:"message,omitempty"`
}
