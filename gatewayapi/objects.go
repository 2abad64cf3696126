package gatewayapi

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8syaml "k8s.io/apimachinery/pkg/util/yaml"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"

	"github.com/paduraksa/paduraksa/internal/problem"
)

// MaxSize is the largest input [Decode] reads, as config.MaxDocumentSize
// is for a document.
const MaxSize = 64 << 20

// The API versions [Decode] reads.
const (
	// GatewayAPIVersion is the Gateway API's group and version: Gateway,
	// HTTPRoute and ReferenceGrant (ReferenceGrant also as
	// gateway.networking.k8s.io/v1beta1, the version most files still
	// give it).
	GatewayAPIVersion = "gateway.networking.k8s.io/v1"
	// DiscoveryAPIVersion is EndpointSlice's.
	DiscoveryAPIVersion = "discovery.k8s.io/v1"
	// CoreAPIVersion is Service's and Secret's.
	CoreAPIVersion = "v1"
)

// ServiceNameLabel is the label of an EndpointSlice that names its
// Service.
const ServiceNameLabel = discoveryv1.LabelServiceName

// Objects are the Kubernetes objects of one or more YAML streams, by
// kind, each in the order read. [Decode] makes them; a caller may also
// build them from objects of its own (an informer's). Every object's
// place in the input is in Source, for problems about it.
//
// The zero value holds no object, and translates to an empty document.
type Objects struct {
	Gateways        []*gwv1.Gateway
	HTTPRoutes      []*gwv1.HTTPRoute
	ReferenceGrants []*gwv1.ReferenceGrant
	EndpointSlices  []*discoveryv1.EndpointSlice
	Services        []*corev1.Service
	Secrets         []*corev1.Secret
}

// Decode reads Kubernetes objects from YAML (or JSON) documents
// separated by "---" lines, strictly: a field the object's type does not
// have, a field given twice and a value of the wrong type are refused,
// as Kubernetes' own strict decoding (sigs.k8s.io/yaml's UnmarshalStrict
// into the API types) refuses them. The kinds read are Gateway,
// HTTPRoute and ReferenceGrant (apiVersion gateway.networking.k8s.io/v1),
// EndpointSlice (discovery.k8s.io/v1), Service and Secret (v1); any other
// kind or version is refused. Empty documents (only comments) are
// skipped.
//
// Every problem is reported at once, each a *config.ValidationError
// with a code of this package (objects.go's table in problems.go) and the
// object's place as its path: "objects[3] (ConfigMap default/x)", or
// "objects[3]" when not even its kind could be read. The objects that did
// decode are returned beside the problems.
func Decode(data []byte) (*Objects, error) {
	var probs problem.List
	objs := &Objects{}
	if len(data) > MaxSize {
		probs.Add(CodeInputSize, "", "larger than "+strconv.Itoa(MaxSize)+" bytes")
		return nil, probs.Err()
	}
	r := k8syaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for i := 0; ; {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			probs.Add(CodeObjectSyntax, objectPath(i, nil), err.Error())
			break
		}
		if isEmptyYAML(doc) {
			continue
		}
		objs.decodeOne(&probs, i, doc)
		i++
	}
	return objs, probs.Err()
}

// decodeOne decodes the i-th object.
func (o *Objects) decodeOne(probs *problem.List, i int, doc []byte) {
	var head struct {
		metav1.TypeMeta `json:",inline"`
		Metadata        struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"metadata"`
	}
	if err := yaml.Unmarshal(doc, &head); err != nil {
		probs.Add(CodeObjectSyntax, objectPath(i, nil), cleanYAMLError(err))
		return
	}
	id := &objectID{kind: head.Kind, namespace: head.Metadata.Namespace, name: head.Metadata.Name}
	at := objectPath(i, id)
	if head.Kind == "" || head.APIVersion == "" {
		probs.Add(CodeObjectKindMissing, at, "an object needs apiVersion and kind")
		return
	}
	var target any
	switch kv := head.APIVersion + " " + head.Kind; kv {
	case GatewayAPIVersion + " Gateway":
		g := new(gwv1.Gateway)
		o.Gateways, target = append(o.Gateways, g), g
	case GatewayAPIVersion + " HTTPRoute":
		r := new(gwv1.HTTPRoute)
		o.HTTPRoutes, target = append(o.HTTPRoutes, r), r
	case GatewayAPIVersion + " ReferenceGrant", "gateway.networking.k8s.io/v1beta1 ReferenceGrant":
		g := new(gwv1.ReferenceGrant)
		o.ReferenceGrants, target = append(o.ReferenceGrants, g), g
	case DiscoveryAPIVersion + " EndpointSlice":
		s := new(discoveryv1.EndpointSlice)
		o.EndpointSlices, target = append(o.EndpointSlices, s), s
	case CoreAPIVersion + " Service":
		s := new(corev1.Service)
		o.Services, target = append(o.Services, s), s
	case CoreAPIVersion + " Secret":
		s := new(corev1.Secret)
		o.Secrets, target = append(o.Secrets, s), s
	default:
		probs.Add(CodeObjectKindUnknown, at, "apiVersion "+strconv.Quote(head.APIVersion)+" kind "+strconv.Quote(head.Kind)+
			" is not read: the kinds read are Gateway, HTTPRoute and ReferenceGrant ("+GatewayAPIVersion+"), EndpointSlice ("+
			DiscoveryAPIVersion+"), Service and Secret ("+CoreAPIVersion+")")
		return
	}
	if err := yaml.UnmarshalStrict(doc, target); err != nil {
		probs.Add(CodeObjectInvalid, at, cleanYAMLError(err))
	}
}

// isEmptyYAML reports whether doc holds nothing but white space and
// comments.
func isEmptyYAML(doc []byte) bool {
	for line := range strings.Lines(string(doc)) {
		t := strings.TrimSpace(line)
		if t != "" && !strings.HasPrefix(t, "#") && t != "---" && t != "..." {
			return false
		}
	}
	return true
}

// cleanYAMLError takes the decoders' wrapping off a message:
// "error unmarshaling JSON: while decoding JSON: json: unknown field
// \"x\"" says `unknown field "x"`.
func cleanYAMLError(err error) string {
	msg := err.Error()
	for _, p := range []string{"error converting YAML to JSON: ", "error unmarshaling JSON: ", "while decoding JSON: ", "json: "} {
		msg = strings.ReplaceAll(msg, p, "")
	}
	return msg
}

// objectID names an object in paths: "HTTPRoute default/shop".
type objectID struct{ kind, namespace, name string }

func (id *objectID) String() string {
	ns := id.namespace
	if ns == "" {
		ns = DefaultNamespace
	}
	return id.kind + " " + ns + "/" + id.name
}

// objectPath is the path of the i-th object: "objects[3] (HTTPRoute
// default/shop)".
func objectPath(i int, id *objectID) string {
	p := "objects[" + strconv.Itoa(i) + "]"
	if id != nil && id.kind != "" {
		p += " (" + id.String() + ")"
	}
	return p
}
