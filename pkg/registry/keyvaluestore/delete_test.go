package keyvaluestore

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/utils/ptr"
)

type warningRecorder []string

func (w *warningRecorder) AddWarning(_, text string) { *w = append(*w, text) }

func policy(p metav1.DeletionPropagation) *metav1.DeletionPropagation { return &p }

func TestTeardownDeleteOptions(t *testing.T) {
	background := policy(metav1.DeletePropagationBackground)
	tests := []struct {
		name        string
		in          *metav1.DeleteOptions
		want        *metav1.DeleteOptions
		warns       bool
		refusalName string // the deleteOptions field a refusal names
	}{
		{
			name: "nil options keep the generic store's meaning (grace period 0)",
			in:   nil,
			want: &metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0), PropagationPolicy: background},
		},
		{
			name: "no policy becomes an explicit Background",
			in:   &metav1.DeleteOptions{},
			want: &metav1.DeleteOptions{PropagationPolicy: background},
		},
		{
			name: "Background stays",
			in:   &metav1.DeleteOptions{PropagationPolicy: background},
			want: &metav1.DeleteOptions{PropagationPolicy: background},
		},
		{
			name:  "Foreground becomes Background, with a warning",
			in:    &metav1.DeleteOptions{PropagationPolicy: policy(metav1.DeletePropagationForeground)},
			want:  &metav1.DeleteOptions{PropagationPolicy: background},
			warns: true,
		},
		{
			name: "orphanDependents=false becomes Background",
			//nolint:staticcheck // SA1019: old clients still send orphanDependents.
			in:   &metav1.DeleteOptions{OrphanDependents: ptr.To(false)},
			want: &metav1.DeleteOptions{PropagationPolicy: background},
		},
		{
			name: "the rest of the options is kept",
			in: &metav1.DeleteOptions{
				GracePeriodSeconds: ptr.To[int64](30),
				Preconditions:      &metav1.Preconditions{UID: ptr.To(types.UID("u")), ResourceVersion: ptr.To("7")},
				DryRun:             []string{metav1.DryRunAll},
				PropagationPolicy:  policy(metav1.DeletePropagationForeground),
			},
			want: &metav1.DeleteOptions{
				GracePeriodSeconds: ptr.To[int64](30),
				Preconditions:      &metav1.Preconditions{UID: ptr.To(types.UID("u")), ResourceVersion: ptr.To("7")},
				DryRun:             []string{metav1.DryRunAll},
				PropagationPolicy:  background,
			},
			warns: true,
		},
		{
			name:        "Orphan is refused",
			in:          &metav1.DeleteOptions{PropagationPolicy: policy(metav1.DeletePropagationOrphan)},
			refusalName: "propagationPolicy",
		},
		{
			name: "orphanDependents=true is refused",
			//nolint:staticcheck // SA1019: old clients still send orphanDependents.
			in:          &metav1.DeleteOptions{OrphanDependents: ptr.To(true)},
			refusalName: "orphanDependents",
		},
		{
			name:        "Orphan is refused in a dry run too",
			in:          &metav1.DeleteOptions{PropagationPolicy: policy(metav1.DeletePropagationOrphan), DryRun: []string{metav1.DryRunAll}},
			refusalName: "propagationPolicy",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var warnings warningRecorder
			ctx := warning.WithWarningRecorder(context.Background(), &warnings)
			inBefore := tc.in.DeepCopy()

			got, err := teardownDeleteOptions(ctx, tc.in)
			assert.Equal(t, inBefore, tc.in, "the caller's options must not change")
			if tc.refusalName != "" {
				require.True(t, apierrors.IsBadRequest(err), "want 400 BadRequest, got %v", err)
				assert.Nil(t, got)
				for _, part := range []string{
					"deleteOptions." + tc.refusalName,
					"teardown",
					"data tier running",
					"spec.persistentVolumeClaimRetentionPolicy.whenDeleted=Retain",
				} {
					assert.Contains(t, err.Error(), part)
				}
				assert.Empty(t, warnings)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			if tc.warns {
				assert.Equal(t, warningRecorder{foregroundDeletionWarning}, warnings)
			} else {
				assert.Empty(t, warnings)
			}
		})
	}
}

// TestRESTRefusesOrphanBeforeStorage: the refusal happens before the generic
// store is reached (this store has no storage and would panic), for one
// object and for a collection.
func TestRESTRefusesOrphanBeforeStorage(t *testing.T) {
	r := &REST{Store: &genericregistry.Store{}}
	ctx := context.Background()
	orphan := &metav1.DeleteOptions{PropagationPolicy: policy(metav1.DeletePropagationOrphan)}

	obj, deleted, err := r.Delete(ctx, "demo", nil, orphan)
	assert.True(t, apierrors.IsBadRequest(err), "got %v", err)
	assert.Nil(t, obj)
	assert.False(t, deleted)

	list, err := r.DeleteCollection(ctx, nil, orphan, nil)
	assert.True(t, apierrors.IsBadRequest(err), "got %v", err)
	assert.Nil(t, list)
}
