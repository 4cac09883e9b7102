package validation

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore"
)

// Bits of FuzzValidateKeyValueStoreSpec's flags: which optional parts the
// fuzzed spec has.
const (
	hasReplicas = 1 << iota
	hasStorageClass
	hasProxy
	hasProxyReplicas
	hasBackup
	hasDeadline
	hasRetention
	paused
)

// fuzzedSpec is the parameters of FuzzValidateKeyValueStoreSpec.
type fuzzedSpec struct {
	image, storageClass, proxyImage, backupImage, command, whenDeleted string
	replicas, port, proxyReplicas                                      int32
	deadline, sizeValue                                                int64
	sizeScale                                                          int32
	flags                                                              uint8
}

func (p fuzzedSpec) spec() kvstore.KeyValueStoreSpec {
	s := kvstore.KeyValueStoreSpec{
		Image: p.image,
		Port:  p.port,
		// Any value and exponent, also those no parser would produce:
		// validation must bound them without ever expanding them.
		Storage: kvstore.StorageSpec{Size: *resource.NewScaledQuantity(p.sizeValue, resource.Scale(p.sizeScale))},
		Paused:  p.flags&paused != 0,
	}
	if p.flags&hasReplicas != 0 {
		s.Replicas = ptr.To(p.replicas)
	}
	if p.flags&hasStorageClass != 0 {
		s.Storage.StorageClassName = ptr.To(p.storageClass)
	}
	if p.flags&hasProxy != 0 {
		s.Proxy = &kvstore.ProxySpec{Image: p.proxyImage}
		if p.flags&hasProxyReplicas != 0 {
			s.Proxy.Replicas = ptr.To(p.proxyReplicas)
		}
	}
	if p.flags&hasBackup != 0 {
		s.Backup = &kvstore.BackupSpec{Image: p.backupImage}
		if p.command != "" {
			s.Backup.Command = strings.Split(p.command, "\x00")
		}
		if p.flags&hasDeadline != 0 {
			s.Backup.ActiveDeadlineSeconds = ptr.To(p.deadline)
		}
	}
	if p.flags&hasRetention != 0 {
		s.PersistentVolumeClaimRetentionPolicy = &kvstore.PersistentVolumeClaimRetentionPolicy{
			WhenDeleted: kvstore.PersistentVolumeClaimRetentionPolicyType(p.whenDeleted),
		}
	}
	return s
}

// seedSpecs are the specs of the example and test manifests.
func seedSpecs(f *testing.F) []fuzzedSpec {
	f.Helper()
	var files []string
	for _, pattern := range []string{"../../../../artifacts/examples/*.yaml", "../../../../test/e2e/testdata/*.yaml"} {
		matches, err := filepath.Glob(pattern)
		if err != nil {
			f.Fatal(err)
		}
		files = append(files, matches...)
	}
	if len(files) == 0 {
		f.Fatal("no seed manifests found")
	}
	var seeds []fuzzedSpec
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		var m struct {
			Spec struct {
				Replicas *int32
				Image    string
				Port     int32
				Storage  struct {
					Size             *resource.Quantity
					StorageClassName *string
				}
				Proxy *struct {
					Replicas *int32
					Image    string
				}
				Backup *struct {
					Image                 string
					Command               []string
					ActiveDeadlineSeconds *int64
				}
				PersistentVolumeClaimRetentionPolicy *struct{ WhenDeleted string }
				Paused                               bool
			}
		}
		if err := yaml.Unmarshal(data, &m); err != nil {
			f.Fatalf("%s: %v", file, err)
		}
		s := m.Spec
		p := fuzzedSpec{image: s.Image, port: s.Port, sizeValue: 1, sizeScale: 9}
		if s.Replicas != nil {
			p.flags |= hasReplicas
			p.replicas = *s.Replicas
		}
		if s.Storage.Size != nil {
			d := s.Storage.Size.AsDec()
			p.sizeValue, p.sizeScale = d.UnscaledBig().Int64(), -int32(d.Scale())
		}
		if s.Storage.StorageClassName != nil {
			p.flags |= hasStorageClass
			p.storageClass = *s.Storage.StorageClassName
		}
		if s.Proxy != nil {
			p.flags |= hasProxy
			p.proxyImage = s.Proxy.Image
			if s.Proxy.Replicas != nil {
				p.flags |= hasProxyReplicas
				p.proxyReplicas = *s.Proxy.Replicas
			}
		}
		if s.Backup != nil {
			p.flags |= hasBackup
			p.backupImage = s.Backup.Image
			p.command = strings.Join(s.Backup.Command, "\x00")
			if s.Backup.ActiveDeadlineSeconds != nil {
				p.flags |= hasDeadline
				p.deadline = *s.Backup.ActiveDeadlineSeconds
			}
		}
		if r := s.PersistentVolumeClaimRetentionPolicy; r != nil {
			p.flags |= hasRetention
			p.whenDeleted = r.WhenDeleted
		}
		if s.Paused {
			p.flags |= paused
		}
		seeds = append(seeds, p)
	}
	return seeds
}

// FuzzValidateKeyValueStoreSpec validates fuzzed specs, on create and on
// updates from and to a valid store. Validation must not panic or hang
// (whatever the size's value and exponent), must accept an unchanged store
// on update whenever it accepts it on create, and must only accept sizes
// and replica counts within the API's bounds.
func FuzzValidateKeyValueStoreSpec(f *testing.F) {
	for _, s := range seedSpecs(f) {
		f.Add(s.image, s.storageClass, s.proxyImage, s.backupImage, s.command, s.whenDeleted,
			s.replicas, s.port, s.proxyReplicas, s.deadline, s.sizeValue, s.sizeScale, s.flags)
	}
	f.Fuzz(func(t *testing.T, image, storageClass, proxyImage, backupImage, command, whenDeleted string,
		replicas, port, proxyReplicas int32, deadline, sizeValue int64, sizeScale int32, flags uint8) {
		p := fuzzedSpec{image, storageClass, proxyImage, backupImage, command, whenDeleted,
			replicas, port, proxyReplicas, deadline, sizeValue, sizeScale, flags}
		kvs := &kvstore.KeyValueStore{
			ObjectMeta: metav1.ObjectMeta{Name: "fuzzed", Namespace: "default", ResourceVersion: "1", Finalizers: []string{kvstore.TeardownFinalizer}},
			Spec:       p.spec(),
		}

		createErrs := ValidateKeyValueStore(kvs)
		if len(createErrs) == 0 {
			if r := *kvs.Spec.Replicas; r < MinReplicas || r > MaxReplicas {
				t.Errorf("accepted spec.replicas %d", r)
			}
			if size := kvs.Spec.Storage.Size; size.Sign() <= 0 || size.Cmp(MaxStorageSize) > 0 {
				t.Errorf("accepted spec.storage.size %s", size.String())
			}
			if errs := ValidateKeyValueStoreUpdate(kvs.DeepCopy(), kvs); len(errs) != 0 {
				t.Errorf("a store valid on create is refused unchanged on update: %v", errs)
			}
		}
		if !SizesEqual(kvs.Spec.Storage.Size, kvs.Spec.Storage.Size.DeepCopy()) {
			t.Errorf("size %s is not equal to itself", kvs.Spec.Storage.Size.String())
		}

		valid := kvs.DeepCopy()
		valid.Spec = kvstore.KeyValueStoreSpec{
			Replicas: ptr.To[int32](3), Image: "redis:7.2", Port: 6379,
			Storage: kvstore.StorageSpec{Size: resource.MustParse("1Gi")},
		}
		ValidateKeyValueStoreUpdate(kvs, valid)
		ValidateKeyValueStoreUpdate(valid, kvs)
		ValidateKeyValueStoreStatusUpdate(kvs, valid)
	})
}
