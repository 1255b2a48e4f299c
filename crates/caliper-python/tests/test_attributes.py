"""Attributes, annotations and by-name values of Python's types."""

from conftest import read_records, run_python


def test_attribute_properties_follow_the_creation_rules(tmp_path):
    code = """
        from pycaliper.instrumentation import Attribute
        from pycaliper.types import *

        a = Attribute("my.value", CALI_TYPE_INT, CALI_ATTR_ASVALUE)
        assert (a.name, a.type, a.properties) == ("my.value", CALI_TYPE_INT, 21), (a.name, a.type, a.properties)
        # create-or-get: the first type and properties stay
        again = Attribute("my.value", CALI_TYPE_STRING)
        assert (again.id, again.type) == (a.id, CALI_TYPE_INT)
        g = Attribute("my.global", CALI_TYPE_STRING, CALI_ATTR_GLOBAL)
        assert g.properties & CALI_ATTR_SCOPE_MASK == CALI_ATTR_SCOPE_PROCESS
        assert Attribute.find_attribute("my.value").id == a.id
        assert Attribute.find_attribute("no.such.attribute") is None
        assert Attribute.find_attribute("region").properties & CALI_ATTR_NESTED
        assert isinstance(AttrTypeEnum.CALI_TYPE_DOUBLE, int) and CALI_TYPE_DOUBLE == 6
        assert CALI_ATTR_ASVALUE | CALI_ATTR_AGGREGATABLE == 2049
    """
    run_python(code, tmp_path)


def test_int_float_and_str_values_reach_the_trace(tmp_path):
    code = """
        from pycaliper.annotation import Annotation
        from pycaliper.instrumentation import *
        from pycaliper.types import *

        Attribute("count", CALI_TYPE_INT, CALI_ATTR_ASVALUE).set(-(2**40))
        Attribute("ratio", CALI_TYPE_DOUBLE, CALI_ATTR_ASVALUE).set(3)    # an int for a double
        Attribute("big", CALI_TYPE_UINT, CALI_ATTR_ASVALUE).set(2**63 + 5)
        meta = Attribute("my.meta", CALI_TYPE_STRING)
        Attribute("with.meta", CALI_TYPE_INT, CALI_ATTR_DEFAULT, [meta], ["tag"])
        kind = Annotation("kind")
        kind.begin("solver")
        begin_byname("level", 3)
        set_byname("residual", 0.25)
        begin_byname("flag")
        begin_region("work")
        end_region("work")
        end_byname("flag")
        end_byname("level")
        kind.end()
    """
    run_python(code, tmp_path, env={"CALI_CONFIG": "event-trace,output=trace.cali"})
    records = read_records(tmp_path / "trace.cali")
    work = [r for r in records if r.get("event.end#region") == "work"]
    assert len(work) == 1, records
    w = work[0]
    assert w["count"] == -(2**40) and w["ratio"] == 3.0 and w["big"] == 2**63 + 5, w
    # cali-query's JSON writes the values of tree (not as-value) attributes as text
    assert (w["kind"], w["level"], str(w["residual"]), w["flag"]) == ("solver", "3", "0.250000", "true"), w


def test_annotation_takes_the_type_of_its_first_value(tmp_path):
    code = """
        from pycaliper.annotation import Annotation
        from pycaliper.instrumentation import Attribute
        from pycaliper.types import *

        ann = Annotation("step.size")
        ann.set(0.5)
        ann.set(2)                      # an int for a double attribute is converted
        assert Attribute.find_attribute("step.size").type == CALI_TYPE_DOUBLE
        try:
            ann.set("large")
        except TypeError as e:
            assert "step.size" in str(e), e
        else:
            raise AssertionError("a str was accepted for a double attribute")
        ann.end()
    """
    run_python(code, tmp_path)


def test_init_and_config_preset(tmp_path):
    code = """
        import pycaliper
        assert isinstance(pycaliper.__version__, str) and pycaliper.__version__
        assert not pycaliper.is_initialized()
        pycaliper.config_preset({"CALI_SERVICES_ENABLE": "event,trace,recorder"})
        pycaliper.config_preset("CALI_RECORDER_FILENAME", "preset.cali")
        pycaliper.init()
        assert pycaliper.is_initialized()
        pycaliper.instrumentation.begin_region("after.init")
        pycaliper.instrumentation.end_region("after.init")
    """
    run_python(code, tmp_path)
    records = read_records(tmp_path / "preset.cali")
    assert [r["event.begin#region"] for r in records if "event.begin#region" in r] == ["after.init"]


def test_the_calls_have_signatures_and_docstrings(tmp_path):
    code = """
        import inspect
        from pycaliper.instrumentation import begin_region, end_region, set_byname, Attribute
        from pycaliper.annotation import Annotation

        assert str(inspect.signature(begin_region)) == "(name)", inspect.signature(begin_region)
        assert "innermost" in end_region.__doc__
        assert str(inspect.signature(set_byname)) == "(name, value)", inspect.signature(set_byname)
        assert begin_region.__module__ == "pycaliper._native"
        assert Annotation.__module__ == "pycaliper.annotation"
    """
    run_python(code, tmp_path)


def test_the_type_stubs_name_what_the_module_has(tmp_path):
    code = """
        import ast, inspect, pathlib
        import pycaliper._native as native

        stub = ast.parse((pathlib.Path(native.__file__).parent / "_native.pyi").read_text())
        declared = {}
        for node in stub.body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                members = {n.name for n in node.body if isinstance(n, ast.FunctionDef)} - {"__init__"}
                declared.setdefault(node.name, set()).update(members)
            elif isinstance(node, ast.AnnAssign):
                declared[node.target.id] = set()
        declared.pop("Value", None)
        present = {name for name in dir(native) if not name.startswith("__") or name == "__version__"}
        present -= {"__doc__", "__file__", "__loader__", "__name__", "__package__", "__spec__", "__all__"}
        assert set(declared) == present, (set(declared) ^ present)
        for name, members in declared.items():
            obj = getattr(native, name)
            if inspect.isclass(obj):
                actual = {m for m in vars(obj) if not m.startswith("_")}
                assert members == actual, (name, members ^ actual)
    """
    run_python(code, tmp_path)
