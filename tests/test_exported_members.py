"""The public surface is pinned: adding or removing a name is a deliberate change."""

import kbconform
import kbconform.contract
import kbconform.errors


def test_kbconform_exports_exactly_these_names() -> None:
    """The top-level package re-exports a short list."""
    assert sorted(kbconform.__all__) == sorted(
        [
            "BackendUnavailable",
            "ContractViolation",
            "Forbidden",
            "KbconformError",
            "NotFound",
            "Problem",
            "SpoofRejected",
            "Unauthenticated",
            "__version__",
            "explain",
            "is_valid",
            "schema_names",
            "validate",
        ]
    )
    for name in kbconform.__all__:
        assert hasattr(kbconform, name)


def test_every_error_has_a_stable_code() -> None:
    """Each error class carries a distinct KB_ code adapters can map onto."""
    errors = [getattr(kbconform.errors, name) for name in kbconform.errors.__all__]
    skip = {kbconform.KbconformError, kbconform.Problem, kbconform.ContractViolation}
    codes = [error.code for error in errors if error not in skip]
    codes.append(kbconform.ContractViolation(contract="x", problems=()).code)
    assert all(code.startswith("KB_") for code in codes)
    assert len(set(codes)) == len(codes)
