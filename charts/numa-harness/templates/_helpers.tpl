{{/* Labels of every object: the component's name (manifests/harness's), plus Helm's. */}}
{{- define "numa-harness.labels" -}}
app.kubernetes.io/name: {{ .name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/part-of: numa-testkit
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The labels a component's pods are selected by. */}}
{{- define "numa-harness.selectorLabels" -}}
app.kubernetes.io/name: {{ .name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
{{- end }}

{{- define "numa-harness.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion (toString .Values.image.tag)) }}
{{- end }}

{{/* The profile's nodes; fails with a message naming the value when it is not a profile. */}}
{{- define "numa-harness.nodeNames" -}}
{{- $profile := fromYaml .Values.profile }}
{{- if or (hasKey $profile "Error") (not (kindIs "slice" $profile.nodes)) }}
{{- fail "profile: not a profile file (YAML with a nodes list; docs/profiles.md)" }}
{{- end }}
{{- $names := list }}
{{- range $i, $node := $profile.nodes }}
{{- if not (and (kindIs "map" $node) (kindIs "string" $node.name)) }}
{{- fail (printf "profile: nodes[%d] has no name" $i) }}
{{- end }}
{{- if not (regexMatch "^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$" $node.name) }}
{{- fail (printf "profile: nodes[%d]: %q is not usable as a label value (at most 63 characters, alphanumerics, '-', '_', '.')" $i $node.name) }}
{{- end }}
{{- $names = append $names $node.name }}
{{- end }}
{{- toJson $names }}
{{- end }}

{{/* Pod annotations that roll a Deployment when its ConfigMap changes. */}}
{{- define "numa-harness.checksum" -}}
checksum/config: {{ . | sha256sum }}
{{- end }}

{{/* Pods of the harness never run on a fake node (no kubelet runs there). */}}
{{- define "numa-harness.notOnFakeNodes" -}}
nodeAffinity:
  requiredDuringSchedulingIgnoredDuringExecution:
    nodeSelectorTerms:
      - matchExpressions:
          - key: fakenrt.io/fake-node
            operator: DoesNotExist
{{- end }}

{{/* The in-cluster kubeconfig of fakenrt-scheduler (manifests/harness/scheduler-kubeconfig.yaml). */}}
{{- define "numa-harness.schedulerKubeconfig" -}}
# The in-cluster kubeconfig of fakenrt-scheduler: the API server's Service name, the
# pod's projected ServiceAccount token (re-read, so rotation is picked up) and CA.
apiVersion: v1
kind: Config
clusters:
  - name: in-cluster
    cluster:
      server: https://kubernetes.default.svc
      certificate-authority: /var/run/secrets/kubernetes.io/serviceaccount/ca.crt
users:
  - name: fakenrt-scheduler
    user:
      tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token
contexts:
  - name: in-cluster
    context:
      cluster: in-cluster
      user: fakenrt-scheduler
current-context: in-cluster
{{- end }}
