// Package images ships localkube's built-in image table.
package images

import _ "embed"

// Table is images.yaml: the image references localkube knows and the local image
// directories that stand in for them, embedded so the kubelet needs no file at run time.
//
//go:embed images.yaml
var Table []byte
