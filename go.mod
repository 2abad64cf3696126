module github.com/paduraksa/paduraksa

go 1.26.0

require (
	github.com/andybalholm/brotli v1.3.0
	github.com/klauspost/compress v1.20.4
	github.com/pires/go-proxyproto v0.15.0
	github.com/quic-go/quic-go v0.65.0
	github.com/stretchr/testify v1.12.1
	golang.org/x/crypto v0.59.0
	golang.org/x/net v0.62.0
	sigs.k8s.io/yaml v1.6.0
)

require (
	github.com/quic-go/qpack v0.6.0 // indirect
	go.yaml.in/yaml/v2 v2.4.2 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/sys v0.50.0 // indirect
	golang.org/x/text v0.44.0 // indirect
)
