"""``manage.py demo_setup``: fill the demo shop with products, two customers with orders, and a staff login."""

import datetime
from decimal import Decimal
from typing import Any

from django.apps import apps
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandParser
from django.db import transaction

from demo_site.shop.models import Order, OrderLine, Product

PRODUCTS = [
    ("MUG-001", "Enamel camping mug", "A 350 ml white enamel mug with a blue rim; survives the campfire.", "14.90", 42),
    ("TEE-002", "Organic cotton T-shirt", "A heavy organic cotton T-shirt in navy, sizes S to XL.", "24.00", 18),
    ("BTL-003", "Insulated water bottle", "A 750 ml steel bottle that keeps drinks cold for 24 hours.", "29.50", 7),
    ("LMP-004", "Desk lamp", "A dimmable LED desk lamp with a warm white light and a USB-C cable.", "49.00", 3),
    ("NTB-005", "Dot-grid notebook", "An A5 notebook with 192 dot-grid pages and a linen cover.", "12.50", 60),
    ("BAG-006", "Canvas tote bag", "A sturdy canvas tote bag with an inside pocket.", "16.00", 0),
]

# (username, password); printed at the end so whoever runs the demo can sign in.
CUSTOMERS = [("alice", "alice-demo-pass"), ("bob", "bob-demo-pass")]
ADMIN = ("admin", "admin-demo-pass")

# order_no, customer, state, eta, [(sku, quantity)]; the number starts with the order date.
ORDERS = [
    ("20250602-0015", "alice", Order.State.DELIVERED, datetime.date(2025, 6, 5), [("NTB-005", 2)]),
    ("20250719-0032", "alice", Order.State.SHIPPED, datetime.date(2025, 7, 23), [("MUG-001", 2), ("BTL-003", 1)]),
    ("20251120-0007", "alice", Order.State.PLACED, datetime.date(2025, 11, 27), [("LMP-004", 1), ("TEE-002", 1)]),
    # Bob's order shows that alice's assistant cannot see other customers' orders.
    ("20251002-0041", "bob", Order.State.PACKED, datetime.date(2025, 10, 6), [("BAG-006", 1)]),
]


class Command(BaseCommand):
    help = "Create the demo shop's products, customers (alice, bob), their orders and a staff user. Idempotent."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--reset",
            action="store_true",
            help="Put the demo orders and stock back as they were first created (after cancelling or buying).",
        )

    @transaction.atomic
    def handle(self, *args: Any, reset: bool = False, **options: Any) -> None:
        products = {
            sku: self.product(sku, name, text, price, stock, reset) for sku, name, text, price, stock in PRODUCTS
        }
        users = {username: self.user(username, password) for username, password in CUSTOMERS}
        users[ADMIN[0]] = self.user(*ADMIN, superuser=True)
        for order_no, username, state, eta, lines in ORDERS:
            self.order(order_no, users[username], state, eta, [(products[sku], qty) for sku, qty in lines], reset)
        if reset:  # what customers bought in the demo (buy_product) goes; the stock above is as first created
            bought = Order.objects.exclude(order_no__in=[order[0] for order in ORDERS])
            for order in bought.filter(customer__in=users.values()):
                order.delete()
                self.stdout.write(f"Removed the order {order} bought in the demo.")

        host = getattr(settings, "DEMO_HOST", "127.0.0.1")
        url = f"http://{'127.0.0.1' if host in ('0.0.0.0', '::') else host}:{getattr(settings, 'DEMO_PORT', 8000)}/"
        self.stdout.write(self.style.SUCCESS("The demo shop is ready."))
        self.stdout.write(f"  Chat page:  {url}")
        self.stdout.write(f"  Admin:      {url}admin/")
        for username, password in CUSTOMERS:
            self.stdout.write(f"  Customer:   {username} / {password}")
        self.stdout.write(f"  Staff:      {ADMIN[0]} / {ADMIN[1]}  (approves tool calls in the admin)")
        if apps.is_installed("rest_framework.authtoken"):
            # The README's curl examples read it from $TOKEN.
            self.stdout.write(f"  API token:  export TOKEN={self.token(users['alice'])}  (alice's)")
            self.stdout.write(f"  Approver:   export STAFF_TOKEN={self.token(users[ADMIN[0]])}  (admin's)")
        self.stdout.write(
            "  Try: “Where is my order 20250719-0032?”, “Please cancel my order 20251120-0007.” (staff decide)"
            " or “Please buy 2 MUG-001.” (you confirm it)"
        )

    def token(self, user: Any) -> str:
        from rest_framework.authtoken.models import Token

        return Token.objects.get_or_create(user=user)[0].key

    def product(self, sku: str, name: str, description: str, price: str, stock: int, reset: bool) -> Product:
        # Stock is only set on creation (or --reset): cancellations in the demo put goods back on the shelf.
        product, created = Product.objects.get_or_create(
            sku=sku, defaults={"name": name, "description": description, "price": Decimal(price), "stock": stock}
        )
        if created:
            self.stdout.write(f"Created product {product}.")
        elif reset and product.stock != stock:
            product.stock = stock
            product.save(update_fields=["stock"])
            self.stdout.write(f"Reset the stock of {product} to {stock}.")
        return product

    def user(self, username: str, password: str, *, superuser: bool = False) -> Any:
        User = get_user_model()
        user = User.objects.filter(username=username).first()
        if user is not None:
            # Leave existing accounts alone: a second run must not change anything, not even the password hash.
            return user
        email = f"{username}@example.com"
        if superuser:
            # A superuser holds every permission, toolcalling.approve_toolcall included.
            user = User.objects.create_superuser(username, email, password)
        else:
            user = User.objects.create_user(username, email, password, first_name=username.capitalize())
        self.stdout.write(f"Created user {username}.")
        return user

    def order(
        self,
        order_no: str,
        customer: Any,
        state: str,
        eta: datetime.date,
        lines: list[tuple[Product, int]],
        reset: bool,
    ) -> None:
        placed = datetime.datetime.strptime(order_no[:8], "%Y%m%d").replace(hour=9, tzinfo=datetime.UTC)
        order, created = Order.objects.get_or_create(
            order_no=order_no,
            defaults={"customer": customer, "state": state, "eta": eta, "created": placed},
        )
        if created:
            for product, quantity in lines:
                OrderLine.objects.create(order=order, product=product, quantity=quantity, price=product.price)
            order.total = sum((line.price * line.quantity for line in order.lines.all()), Decimal("0"))
            order.save(update_fields=["total"])
            self.stdout.write(f"Created order {order_no} for {customer.username}.")
        elif reset and (order.state, order.eta, order.cancel_reason) != (state, eta, ""):
            order.state, order.eta, order.cancel_reason = state, eta, ""
            order.save(update_fields=["state", "eta", "cancel_reason"])
            self.stdout.write(f"Reset order {order_no} to {state}.")
