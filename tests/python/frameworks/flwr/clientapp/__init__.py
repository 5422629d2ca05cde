from .client_app import ClientApp as ClientApp
