package validation

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore"
)

// The annotation v1beta1 carries status.currentImage in never reaches
// storage: conversion removes it, and validation refuses it from a v1alpha1
// client, on create and on update, unless the stored object already had it.
func TestConversionAnnotationRefused(t *testing.T) {
	withAnnotation := func(value string) *kvstore.KeyValueStore {
		kvs := validKVS()
		kvs.Annotations = map[string]string{kvstore.CurrentImageAnnotation: value, "other": "kept"}
		return kvs
	}
	path := "metadata.annotations[" + kvstore.CurrentImageAnnotation + "]"

	assert.Equal(t, expect(forbidden(path)), summarize(ValidateKeyValueStore(withAnnotation("redis:7.2"))), "create")

	old := validKVS()
	old.ResourceVersion = "1"
	updated := withAnnotation("redis:7.2")
	updated.ResourceVersion = "1"
	assert.Equal(t, expect(forbidden(path)), summarize(ValidateKeyValueStoreUpdate(updated, old)), "update adds it")

	oldWith := withAnnotation("redis:7.2")
	oldWith.ResourceVersion = "1"
	same := withAnnotation("redis:7.2")
	same.ResourceVersion = "1"
	assert.Empty(t, ValidateKeyValueStoreUpdate(same, oldWith), "update keeps a value stored before the rule")
	changed := withAnnotation("redis:7.4")
	changed.ResourceVersion = "1"
	assert.Equal(t, expect(forbidden(path)), summarize(ValidateKeyValueStoreUpdate(changed, oldWith)), "update changes it")

	assert.Empty(t, ValidateKeyValueStore(validKVS()), "no annotation")
}
