"""check_pytest.py JUNIT OUTPUT: the acceptance rule for `pytest --gpuleak`
on real PyTorch: the two leaking tests fail (naming their lines and
holders), the others pass: the first product (PyTorch's cuBLAS workspace,
kept for the process), a function-scoped model fixture, and what a test
class's setup_method keeps on self."""
import os
import sys
import xml.etree.ElementTree as ET

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pytest_torch", "test_torch_leaks.py")


def line_of(marker):
    with open(HERE) as fh:
        return next(i for i, text in enumerate(fh, 1) if marker in text)


def main():
    junit, output = sys.argv[1], open(sys.argv[2]).read()
    cases = {}
    for case in ET.parse(junit).iter("testcase"):
        props = {p.get("name"): p.get("value") for p in case.iter("property")}
        failed = case.find("error") is not None or case.find("failure") is not None
        cases[case.get("name")] = (failed, props.get("gpuleak_leaked_bytes"))
    print(cases)
    want_failed = {"test_keeps_a_batch", "test_keeps_a_loss_with_its_graph"}
    ok = all(cases.get(name, (None,))[0] == (name in want_failed)
             for name in ("test_clean_matmul", "test_keeps_a_batch", "test_keeps_a_loss_with_its_graph",
                          "test_steady_under_repeat", "test_uses_a_model_fixture", "test_uses_its_state"))
    for marker, holder in (("# LEAK-LINE", "kept[...]"), ("# GRAPH-LINE", "losses[...]")):
        where = "test_torch_leaks.py:%d" % line_of(marker)
        if where not in output or holder not in output:
            print("FAIL: %s or %s missing from the output" % (where, holder))
            ok = False
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
