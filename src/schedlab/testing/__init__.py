"""The policy conformance suite, for schedlab's own policies and for plugins in other packages.

    from schedlab.testing import assert_conforms, check_policy

    def test_my_policy_meets_the_contract():
        assert_conforms(MyPolicy)          # raises AssertionError listing every finding

:func:`check_policy` returns the findings instead (empty: the policy conforms).
"""

from schedlab.testing.conformance import Finding, assert_conforms, check_policy

__all__ = ["Finding", "assert_conforms", "check_policy"]
