"""The demo shop's dataset (``make eval``) passes with the offline model, and leaves the demo data as it was."""

from io import StringIO
from pathlib import Path

from django.core.management import call_command

from demo_site.shop.models import Order, Product
from toolcalling.testutils import override_toolcalling

DATASET = Path(__file__).parents[2] / "demo_site" / "shop" / "evals" / "shop.yaml"


def demo_data():
    orders = list(Order.objects.order_by("order_no").values_list("order_no", "state", "cancel_reason"))
    return orders, list(Product.objects.order_by("sku").values_list("sku", "stock"))


@override_toolcalling(OFFLINE_MODEL=True)
def test_the_demo_dataset_passes_and_changes_nothing(shop):
    before = demo_data()
    out = StringIO()
    call_command("toolcalling_eval", str(DATASET), "--assistant", "shop", "--no-store", stdout=out)  # exit 0
    assert "8/8 passed (100%)" in out.getvalue()
    assert demo_data() == before
